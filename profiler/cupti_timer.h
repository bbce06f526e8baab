#pragma once
// Per-layer device time from CUPTI: each layer's passes run under their own
// external correlation id, and the kernels and copies launched under it are
// summed (their busy time) once the step has finished. No LibTorch.
#include "profiler/layer_timer.h"

namespace papaya::profiler {

class CuptiTimer : public LayerTimer {
 public:
  // Starts CUPTI's activity recording; throws std::runtime_error if it cannot.
  explicit CuptiTimer(int layers);
  ~CuptiTimer() override;
  CuptiTimer(const CuptiTimer&) = delete;
  CuptiTimer& operator=(const CuptiTimer&) = delete;

  void start_step() override;
  void begin(int layer, Pass pass) override;
  void end(int layer, Pass pass) override;
  std::vector<PassTimes> finish_step() override;
  std::string name() const override { return "cupti"; }

 private:
  int layers_;
};

}  // namespace papaya::profiler
