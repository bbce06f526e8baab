#pragma once
// Host time between a layer's markers. On CPU that is the layer's compute; on
// a GPU it is only that if the device is synchronized at every marker, which
// `synchronize` does (and which serializes the device: a fallback for CUDA
// builds without CUPTI).
#include <chrono>
#include <functional>

#include "profiler/layer_timer.h"

namespace papaya::profiler {

class WallClockTimer : public LayerTimer {
 public:
  // `synchronize` empty: plain wall clock.
  WallClockTimer(int layers, std::function<void()> synchronize);
  void start_step() override;
  void begin(int layer, Pass pass) override;
  void end(int layer, Pass pass) override;
  std::vector<PassTimes> finish_step() override;
  std::string name() const override;

 private:
  using Clock = std::chrono::steady_clock;
  struct Open {
    Clock::time_point since;
    bool open = false;
  };
  Open& open(int layer, Pass pass);

  std::function<void()> synchronize_;
  std::vector<PassTimes> times_;
  std::vector<Open> forward_, backward_;
};

}  // namespace papaya::profiler
