#pragma once
// Profiling one batch size: warm-up steps, then measured training steps with
// every layer marked (LayerRecorder), then each segment's recompute time. Out
// of memory anywhere in it makes the batch an OOM row, not an error.
#include <torch/torch.h>

#include <functional>
#include <vector>

#include "executor/data.h"
#include "executor/memory.h"
#include "executor/networks/network.h"
#include "model/profile.h"
#include "profiler/layer_timer.h"

namespace papaya::profiler {

struct BatchRunOptions {
  int64_t batch = 1;
  int warmup = 2, steps = 5;
  int64_t memory_limit = 0;       // > 0: emulated device limit on allocated bytes
  bool time_segments = true;      // false: the steps alone (recompute_s, returns_last_layer_output left empty)
  std::function<void()> on_step;  // after each step, and after the recompute timing
};

// The times of one measured step.
struct StepTimes {
  double iteration_s = 0, forward_s = 0, backward_s = 0, optimizer_s = 0;
  std::vector<PassTimes> layers;  // network.layers() order
};

struct BatchRun {
  model::IterationMeasurement iteration;        // oom: nothing else is filled; times: median_run's
  std::vector<model::LayerMeasurement> layers;  // network.layers() order
  std::vector<double> recompute_s;              // network.segments() order
  std::vector<bool> returns_last_layer_output;  // network.segments() order
  std::vector<StepTimes> steps;                 // every measured step
};

// Several runs of one batch size as one, with the batch's times: the
// iteration's parts from its median step by iteration time (they add up), each
// layer's its own median over all the steps (one layer slowed down once by
// another process would otherwise bend its fitted slope whenever that step
// was the median one; the rest of the iteration takes the difference), each
// segment's median recompute time; the largest bytes, all steps counted; out
// of memory if any run was.
BatchRun median_run(const std::vector<BatchRun>& runs);

// Trains with `optimizer` as executor::train does (gradients zeroed in place,
// forward, backward, step), each batch made before the step's clock starts.
// Each measured step's times go to `steps` (median_run makes the batch's
// times from them), bytes the largest seen.
BatchRun run_batch(executor::Network& network, executor::DataSource& data, torch::optim::Optimizer& optimizer,
                   executor::MemoryTracker& memory, LayerTimer& timer, const BatchRunOptions& options);

}  // namespace papaya::profiler
