#pragma once
// The training loop: AdamW over the network's parameters, timed steps, the
// allocator's peak, a progress callback.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "executor/data.h"
#include "executor/memory.h"
#include "executor/networks/network.h"

namespace papaya::executor {

struct TrainOptions {
  int steps = 20;
  int64_t batch = 8;
  double lr = 1e-3;
  double weight_decay = 0.01;
  // Steps left out of throughput and peak memory: the first allocates the
  // optimizer state and warms caches.
  int warmup_steps = 2;
  std::function<void(int step, int steps, double loss)> on_step;
  // Called before each step's forward, with the step (from 0): e.g. AppliedPlan::begin_step.
  std::function<void(int step)> before_step;
  // Measure, in the last step's forward, the bytes stored for backward by strategy.
  bool record_stored_bytes = false;
};

struct TrainReport {
  std::vector<double> losses;    // one per step
  double samples_per_s = 0;      // over the measured steps
  double step_seconds = 0;       // mean over the measured steps
  // The median measured step: the steady pace, which a slow moment of a
  // shared machine does not move (the profiler's times are medians too).
  double median_step_seconds = 0;
  double median_samples_per_s = 0;  // batch / median_step_seconds
  int64_t peak_bytes = 0;        // allocator peak over the measured steps
  // The same over forward and backward only: without the optimizer's
  // temporaries (for a large embedding, AdamW's exceed the activations).
  int64_t forward_backward_peak_bytes = 0;
  // Allocated when forward ends (the most over the measured steps): static
  // bytes plus what backward needs, the saved tensors foremost.
  int64_t forward_end_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  int64_t static_bytes = 0;      // weights + gradients + optimizer state
  int warmup_steps = 0;          // the number actually left out
  // Bytes stored for backward in the last step, by strategy name (if recorded).
  std::map<std::string, int64_t> stored_bytes;
};

TrainReport train(Network& network, DataSource& data, MemoryTracker& memory, const TrainOptions& options);

// Weights + gradients + optimizer state, from the tensors themselves.
int64_t static_bytes(const Network& network, const torch::optim::Optimizer& optimizer);

}  // namespace papaya::executor
