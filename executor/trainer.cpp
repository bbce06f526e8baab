#include "executor/trainer.h"

#include <algorithm>
#include <chrono>

#include "executor/device.h"
#include "executor/moms/stored_bytes.h"
#include "model/median.h"

namespace papaya::executor {

namespace {
int64_t nbytes(const torch::Tensor& t) { return t.defined() ? static_cast<int64_t>(t.numel() * t.element_size()) : 0; }
}  // namespace

int64_t static_bytes(const Network& network, const torch::optim::Optimizer& optimizer) {
  int64_t total = 0;
  for (const auto& p : network.parameters()) total += nbytes(p) + nbytes(p.grad());
  for (const auto& [key, state] : optimizer.state()) {
    const auto& s = static_cast<const torch::optim::AdamWParamState&>(*state);
    total += nbytes(s.exp_avg()) + nbytes(s.exp_avg_sq()) + nbytes(s.max_exp_avg_sq());
  }
  return total;
}

TrainReport train(Network& network, DataSource& data, MemoryTracker& memory, const TrainOptions& options) {
  const torch::Device device = network.parameters().front().device();
  torch::optim::AdamW optimizer(network.parameters(),
                                torch::optim::AdamWOptions(options.lr).weight_decay(options.weight_decay));
  network.train();

  TrainReport report;
  report.warmup_steps = std::clamp(options.warmup_steps, 0, std::max(0, options.steps - 1));
  std::vector<double> measured_seconds;
  for (int step = 0; step < options.steps; ++step) {
    const bool measured = step >= report.warmup_steps;
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
    if (measured) {
      synchronize(device);
      report.forward_end_bytes = std::max(report.forward_end_bytes, memory.current());
    }
    loss.backward();
    if (measured) {
      synchronize(device);
      report.forward_backward_peak_bytes = std::max(report.forward_backward_peak_bytes, memory.peak());
    }
    optimizer.step();
    const double value = loss.item<double>();
    loss = torch::Tensor();
    synchronize(device);

    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report.losses.push_back(value);
    if (measured) {
      measured_seconds.push_back(seconds);
      report.peak_bytes = std::max(report.peak_bytes, memory.peak());
      report.peak_reserved_bytes = std::max(report.peak_reserved_bytes, memory.reserved_peak());
    }
    if (options.on_step) options.on_step(step + 1, options.steps, value);
  }
  double total_seconds = 0;
  for (double s : measured_seconds) total_seconds += s;
  report.step_seconds = measured_seconds.empty() ? 0 : total_seconds / static_cast<double>(measured_seconds.size());
  report.median_step_seconds = measured_seconds.empty() ? 0 : model::median(measured_seconds);
  report.median_samples_per_s = report.median_step_seconds > 0 ? static_cast<double>(options.batch) / report.median_step_seconds : 0;
  report.samples_per_s = report.step_seconds > 0 ? static_cast<double>(options.batch) / report.step_seconds : 0;
  report.static_bytes = static_bytes(network, optimizer);
  return report;
}

}  // namespace papaya::executor
