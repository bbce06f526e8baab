#pragma once
// Per-layer time, taken between markers that the layer recorder sets around
// each layer's forward and backward. Two backends: the wall clock (CPU; on a
// CUDA build without CUPTI, synchronizing the device at every marker) and
// CUPTI (device time of the kernels each layer launched). No LibTorch.
#include <string>
#include <vector>

namespace papaya::profiler {

enum class Pass { forward, backward };

struct PassTimes {
  double forward_s = 0, backward_s = 0;
};

class LayerTimer {
 public:
  virtual ~LayerTimer() = default;
  // Before a step: forgets what was timed before.
  virtual void start_step() = 0;
  // Called on the thread that runs the layer's pass (backward runs on the
  // autograd engine's device thread on CUDA); every pass begun in a step is
  // ended in it.
  virtual void begin(int layer, Pass pass) = 0;
  virtual void end(int layer, Pass pass) = 0;
  // Once the step's work has finished on the device: seconds per layer.
  virtual std::vector<PassTimes> finish_step() = 0;
  // model::MachineInfo::timing: "wall-clock", "synchronized-wall-clock", "cupti".
  virtual std::string name() const = 0;
};

}  // namespace papaya::profiler
