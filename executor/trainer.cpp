#include "executor/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "executor/device.h"
#include "executor/finite.h"
#include "executor/loss_scale.h"
#include "executor/optimizer.h"
#include "executor/storage/stored_bytes.h"
#include "model/error.h"
#include "model/median.h"

namespace papaya::executor {

TrainReport train(Network& network, torch::optim::Optimizer& optimizer, DataSource& data, MemoryTracker& memory,
                  const TrainOptions& options) {
  const torch::Device device = network.parameters().front().device();
  network.train();

  TrainReport report;
  report.steps_done = options.first_step;
  LossScale loss_scale(network.precision());
  double exchange_total = 0;
  // Runs a data-parallel exchange (if any), timed.
  const auto exchange = [&](const std::function<void()>& run, bool measured) {
    if (!run) return;
    const auto start = std::chrono::steady_clock::now();
    run();
    synchronize(device);
    if (measured) exchange_total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const int steps = std::max(0, options.steps - options.first_step);
  report.warmup_steps = std::clamp(options.warmup_steps, 0, std::max(0, steps - 1));
  for (int step = options.first_step; step < options.steps; ++step) {
    const bool measured = step - options.first_step >= report.warmup_steps;
    // The batch is made before the clock starts, as the profiler does: the
    // step is what papaya predicts, a data pipeline is the user's.
    const Batch batch = data.next(options.batch);
    synchronize(device);
    if (measured) memory.reset_peak();
    const auto start = std::chrono::steady_clock::now();

    // Gradients stay allocated between steps (zeroed in place): they are part
    // of the static memory, in LibTorch 1.x and 2.x alike.
    for (auto& p : network.parameters()) {
      if (p.grad().defined()) p.mutable_grad().zero_();
    }
    if (options.before_step) options.before_step(step);
    torch::Tensor loss;
    double value = 0;
    if (options.forward_backward) {
      value = options.forward_backward(batch);
    } else {
      if (options.record_stored_bytes && step == options.steps - 1) {
        StoredBytesRecorder recorder;
        {
          const StoredBytesGuard guard(&recorder);
          loss = network.loss(batch);
        }
        report.stored_bytes = recorder.bytes();
      } else {
        loss = network.loss(batch);
      }
      network.set_loss_scale(loss_scale.value());  // before backward, which reads it
      if (measured) {
        synchronize(device);
        report.forward_end_bytes = std::max(report.forward_end_bytes, memory.current());
      }
      loss_scale.backward(loss);
    }
    if (measured) {
      synchronize(device);
      report.forward_backward_peak_bytes = std::max(report.forward_backward_peak_bytes, memory.peak());
    }
    exchange(options.after_backward, measured);
    const bool stepped = loss_scale.step(optimizer, network);
    exchange(options.after_optimizer_step, measured);
    if (loss.defined()) value = loss.item<double>();
    loss = torch::Tensor();
    synchronize(device);

    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // Off the clock: the gradients are still those of this step. A step
    // skipped for overflowing fp16 gradients is loss scaling at work, until
    // the scale falls below 1.
    const bool scaling_skipped = !stepped && loss_scale.value() >= 1 && std::isfinite(value);
    const std::string broken = scaling_skipped ? "" : non_finite(network, value);
    if (!broken.empty()) {
      throw InputError("training stopped at step " + std::to_string(step + 1) + " of " + std::to_string(options.steps) + ": " +
                       broken + " (a smaller learning rate, or fp32, may help)");
    }
    report.losses.push_back(value);
    report.steps_done = step + 1;
    if (measured) {
      report.measured_step_seconds.push_back(seconds);
      report.peak_bytes = std::max(report.peak_bytes, memory.peak());
      report.peak_reserved_bytes = std::max(report.peak_reserved_bytes, memory.reserved_peak());
    }
    if (options.on_step) options.on_step(step + 1, options.steps, value);
    if (options.after_step && !options.after_step(step + 1)) break;
  }
  const auto& measured = report.measured_step_seconds;
  const double total_seconds = std::accumulate(measured.begin(), measured.end(), 0.0);
  report.step_seconds = measured.empty() ? 0 : total_seconds / static_cast<double>(measured.size());
  report.median_step_seconds = measured.empty() ? 0 : model::median(measured);
  report.median_samples_per_s =
      report.median_step_seconds > 0 ? static_cast<double>(options.batch) / report.median_step_seconds : 0;
  report.exchange_seconds = measured.empty() ? 0 : exchange_total / static_cast<double>(measured.size());
  report.samples_per_s = report.step_seconds > 0 ? static_cast<double>(options.batch) / report.step_seconds : 0;
  report.static_bytes = static_bytes(network, optimizer);
  if (loss_scale.on()) report.loss_scale = loss_scale.value();
  report.skipped_steps = loss_scale.skipped_steps();
  return report;
}

}  // namespace papaya::executor
