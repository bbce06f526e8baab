#pragma once
// The training loop: steps of an optimizer over the network's parameters,
// timed, the allocator's peak, callbacks before and after each step.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "executor/data.h"
#include "executor/memory.h"
#include "executor/networks/network.h"

namespace papaya::executor {

struct TrainOptions {
  int steps = 20;      // the step to train up to (total, counting first_step)
  int first_step = 0;  // where this run starts: a resumed run's steps done
  int64_t batch = 8;
  double lr = 1e-3;
  double weight_decay = 0.01;
  // Steps of this run left out of throughput and peak memory: they warm
  // caches (the optimizer's state exists before the first, make_optimizer).
  int warmup_steps = 2;
  std::function<void(int step, int steps, double loss)> on_step;
  // Called before each step's forward, with the step (from 0): e.g. AppliedPlan::begin_step.
  std::function<void(int step)> before_step;
  // Called between backward and the optimizer step, on the clock and timed
  // as the exchange: averaging the gradients over data-parallel ranks (what
  // of it backward did not hide).
  std::function<void()> after_backward;
  // Called after the optimizer step, on the clock and timed as the exchange
  // too: gathering the parameters each ZeRO-1 rank stepped.
  std::function<void()> after_optimizer_step;
  // Called after each step, off the clock, with the steps done; returning
  // false ends training there (a signal, a checkpoint's last step).
  std::function<bool(int steps_done)> after_step;
  // Measure, in the last step's forward, the bytes stored for backward by strategy.
  bool record_stored_bytes = false;
  // Runs the step's forward and backward in place of network.loss and its
  // backward, returning the loss: a pipeline stage's schedule (no loss
  // scaling, no stored bytes recorded).
  std::function<double(const Batch&)> forward_backward;
};

// One data-parallel rank's figures (TrainReport's, of that rank).
struct RankFigures {
  int64_t peak_bytes = 0, static_bytes = 0;
  double exchange_seconds = 0, median_step_seconds = 0;
};

struct TrainReport {
  std::vector<double> losses;  // one per step of this run
  int steps_done = 0;          // the step training ended at (total)
  double samples_per_s = 0;    // over the measured steps
  double step_seconds = 0;     // mean over the measured steps
  std::vector<double> measured_step_seconds;
  // The median measured step: the steady pace, which a slow moment of a
  // shared machine does not move (the profiler's times are medians too).
  double median_step_seconds = 0;
  double median_samples_per_s = 0;  // batch / median_step_seconds
  int64_t peak_bytes = 0;           // allocator peak over the measured steps
  // The same over forward and backward only: without the optimizer's
  // temporaries (for a large embedding, AdamW's exceed the activations).
  int64_t forward_backward_peak_bytes = 0;
  // Allocated when forward ends (the most over the measured steps): static
  // bytes plus what backward needs, the saved tensors foremost.
  int64_t forward_end_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  int64_t static_bytes = 0;        // weights + gradients + optimizer state
  int warmup_steps = 0;            // the number actually left out
  double exchange_seconds = 0;     // after_backward's, mean over the measured steps
  std::vector<RankFigures> ranks;  // of every rank of a data-parallel job, by rank
  // Dynamic loss scaling (amp-fp16, executor/loss_scale.h): the scale at
  // the end, and the steps it skipped for overflowing gradients.
  std::optional<double> loss_scale;
  int skipped_steps = 0;
  // Bytes stored for backward in the last step, by strategy name (if recorded).
  std::map<std::string, int64_t> stored_bytes;
};

// Trains from options.first_step to options.steps (or until after_step says
// stop). A step whose loss or gradients are not finite ends training with an
// InputError naming the step and the first layer with a non-finite gradient.
TrainReport train(Network& network, torch::optim::Optimizer& optimizer, DataSource& data, MemoryTracker& memory,
                  const TrainOptions& options);

}  // namespace papaya::executor
