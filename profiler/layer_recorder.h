#pragma once
// The profiler's LayerObserver: sets markers around every layer of a training
// step and records its time (through a LayerTimer) and the allocator's bytes.
//
// Forward: between forward_begin and forward_end. Backward: each input that
// needs a gradient is replaced by an alias behind an identity node that
// fires once the layer's backward has produced that input's gradient (the
// layer's backward ends when all have), and the output by one that fires when
// the output's gradient is complete, just before the layer's backward nodes
// run (it begins). A residual connection does not blur this: the alias is the
// layer's own input, so the skip path's gradient flows around it, and the
// autograd engine runs the layer's nodes (created between the two markers)
// back to back. A layer none of whose inputs needs a gradient (a network's
// first, the first of a branch: a siamese pair's second tower, positions
// from torch.arange) has no marker at its end: it ends where the next
// layer's backward begins, or backward returns, and not where the last
// branch's backward does. The aliases are not views, so that an in-place op on one
// keeps its node on the gradient's path. tests/profiler/markers_test.cpp
// checks it node by node.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "executor/layer.h"
#include "executor/memory.h"
#include "executor/networks/network.h"
#include "model/profile.h"
#include "profiler/layer_timer.h"

namespace papaya::profiler {

class LayerRecorder : public executor::LayerObserver {
 public:
  // `memory_limit` > 0: a forward that takes the allocator past it throws
  // MemoryLimitExceeded (profiler/out_of_memory.h).
  LayerRecorder(const executor::Network& network, LayerTimer& timer, executor::MemoryTracker& memory, int64_t memory_limit = 0);

  // Before a step: forgets the last one and restarts the allocator's peak.
  void start_step();
  // After backward returned: ends the backward of the layers none of whose
  // inputs needed a gradient still open (the first one: its work is the last).
  void finish_backward();
  // This step's bytes per layer (its times are the timer's).
  const std::vector<model::LayerMeasurement>& bytes() const { return bytes_; }
  // The allocator's peak (reserved peak on CUDA) since start_step. The
  // recorder restarts the tracker's peak around every layer; these fold the
  // windows together.
  int64_t step_peak();
  int64_t step_reserved_peak();
  // Folds the allocator's peak so far into the step's and starts a new
  // window: the tracker's peak is then that of what follows alone.
  void restart_peak();

  void forward_begin(const executor::Layer& layer, std::vector<torch::Tensor*>& inputs) override;
  void saved(const executor::Layer&, const executor::Slot&, const torch::Tensor&) override {}
  void forward_end(const executor::Layer& layer, torch::Tensor& output) override;

 private:
  void backward_begin(int layer);
  void input_gradient_done(int layer);
  void backward_end(int layer);
  // At a layer's end: the tracker's peak is then the gap's that follows, up
  // to the next layer's start (gap_peak), unless a layer is still open.
  void open_gap();
  int64_t gap_peak();

  LayerTimer& timer_;
  executor::MemoryTracker& memory_;
  int64_t memory_limit_;
  std::unordered_map<const executor::Layer*, int> index_;
  std::vector<model::LayerMeasurement> bytes_;
  std::vector<int> pending_inputs_;  // input markers whose gradient has not come yet
  std::vector<bool> backward_open_;
  std::vector<int> open_without_inputs_;  // backward begun, none of its inputs marked
  int open_layers_ = 0;                   // forward or backward windows begun and not ended
  bool in_gap_ = false;
  int64_t peak_ = 0, reserved_peak_ = 0;
};

}  // namespace papaya::profiler
