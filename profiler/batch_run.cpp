#include "profiler/batch_run.h"

#include <algorithm>
#include <chrono>

#include "executor/device.h"
#include "executor/loss_scale.h"
#include "executor/optimizer.h"
#include "model/median.h"
#include "profiler/layer_recorder.h"
#include "profiler/out_of_memory.h"
#include "profiler/segment_recompute.h"

namespace papaya::profiler {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point from, Clock::time_point to) { return std::chrono::duration<double>(to - from).count(); }

void keep_max(int64_t& into, int64_t value) { into = std::max(into, value); }

template <typename Get>
double median_over(const std::vector<StepTimes>& steps, Get get) {
  std::vector<double> values;
  for (const StepTimes& s : steps) values.push_back(get(s));
  return model::median(values);
}

// Folds one measured step's bytes into the batch's: the largest.
void add_bytes(std::vector<model::LayerMeasurement>& into, const std::vector<model::LayerMeasurement>& bytes) {
  for (size_t i = 0; i < into.size(); ++i) {
    model::LayerMeasurement& m = into[i];
    keep_max(m.forward_start_bytes, bytes[i].forward_start_bytes);
    keep_max(m.forward_end_bytes, bytes[i].forward_end_bytes);
    keep_max(m.forward_peak_bytes, bytes[i].forward_peak_bytes);
    keep_max(m.backward_start_bytes, bytes[i].backward_start_bytes);
    keep_max(m.backward_end_bytes, bytes[i].backward_end_bytes);
    keep_max(m.backward_peak_bytes, bytes[i].backward_peak_bytes);
    keep_max(m.forward_gap_peak_bytes, bytes[i].forward_gap_peak_bytes);
    keep_max(m.backward_gap_peak_bytes, bytes[i].backward_gap_peak_bytes);
  }
}

BatchRun measure(executor::Network& network, executor::DataSource& data, torch::optim::Optimizer& optimizer,
                 executor::MemoryTracker& memory, LayerTimer& timer, const BatchRunOptions& options) {
  const torch::Device device = network.parameters().front().device();
  LayerRecorder recorder(network, timer, memory, options.memory_limit);
  const auto check_limit = [&] {
    if (options.memory_limit > 0 && recorder.step_peak() > options.memory_limit) {
      throw MemoryLimitExceeded(recorder.step_peak(), options.memory_limit);
    }
  };
  BatchRun run;
  model::IterationMeasurement& it = run.iteration;
  it.batch = static_cast<int>(options.batch);
  it.steps = options.steps;
  run.layers.resize(network.layers().size());
  network.train();
  executor::LossScale loss_scale(network.precision());

  for (int step = 0; step < options.warmup + options.steps; ++step) {
    const executor::Batch batch = data.next(options.batch);
    executor::synchronize(device);
    timer.start_step();
    recorder.start_step();
    const auto start = Clock::now();
    for (auto& p : network.parameters()) {
      if (p.grad().defined()) p.mutable_grad().zero_();
    }
    const auto zeroed = Clock::now();
    torch::Tensor loss;
    {
      executor::ObserverGuard guard(&recorder);
      loss = network.loss(batch);
    }
    executor::synchronize(device);
    const auto forward_done = Clock::now();
    const int64_t forward_end_bytes = memory.current();
    loss_scale.backward(loss);
    recorder.finish_backward();
    executor::synchronize(device);
    const auto backward_done = Clock::now();
    check_limit();
    const int64_t passes_peak = recorder.step_peak();
    recorder.restart_peak();
    loss_scale.step(optimizer, network);
    executor::synchronize(device);
    const auto end = Clock::now();
    const int64_t optimizer_peak = memory.peak();
    check_limit();
    loss = torch::Tensor();
    const std::vector<PassTimes> times = timer.finish_step();

    if (step >= options.warmup) {
      run.steps.push_back({seconds(start, end), seconds(zeroed, forward_done), seconds(forward_done, backward_done),
                           seconds(start, zeroed) + seconds(backward_done, end), times});
      keep_max(it.peak_bytes, recorder.step_peak());
      keep_max(it.passes_peak_bytes, passes_peak);
      keep_max(it.optimizer_peak_bytes, optimizer_peak);
      keep_max(it.peak_reserved_bytes, recorder.step_reserved_peak());
      keep_max(it.forward_end_bytes, forward_end_bytes);
      add_bytes(run.layers, recorder.bytes());
    }
    if (options.on_step) options.on_step();
  }
  it.static_bytes = executor::static_bytes(network, optimizer);
  if (!options.time_segments) return run;
  const SegmentInputs inputs = capture_segment_inputs(network, data.next(options.batch));
  run.recompute_s = time_recompute(network, inputs, options.steps);
  run.returns_last_layer_output = returns_last_layer_output(network, inputs);
  if (options.on_step) options.on_step();
  return run;
}

// The iteration's times become those of the median step by iteration time
// (its parts add up to it), and each layer's its own median over the steps:
// not that step's, since a layer slowed down once by another process on a
// shared machine would otherwise keep that time whenever its step was the
// median one (2.5x for one layer, seen on the 2-core VM), and with three batch
// sizes one such point bends the layer's fitted slope. The rest of the
// iteration (its time less the layers' and the optimizer's) takes the
// difference.
void take_median_times(BatchRun& run) {
  if (run.steps.empty()) return;
  std::vector<const StepTimes*> by_time;
  for (const StepTimes& s : run.steps) by_time.push_back(&s);
  std::sort(by_time.begin(), by_time.end(), [](const auto* a, const auto* b) { return a->iteration_s < b->iteration_s; });
  const StepTimes& median = *by_time[(by_time.size() - 1) / 2];
  model::IterationMeasurement& it = run.iteration;
  it.iteration_s = median.iteration_s;
  it.forward_s = median.forward_s;
  it.backward_s = median.backward_s;
  it.optimizer_s = median.optimizer_s;
  for (size_t i = 0; i < run.layers.size(); ++i) {
    run.layers[i].forward_s = median_over(run.steps, [i](const StepTimes& s) { return s.layers[i].forward_s; });
    run.layers[i].backward_s = median_over(run.steps, [i](const StepTimes& s) { return s.layers[i].backward_s; });
  }
}

}  // namespace

BatchRun median_run(const std::vector<BatchRun>& runs) {
  for (const BatchRun& r : runs) {
    if (r.iteration.oom) return r;
  }
  BatchRun out = runs.front();
  out.iteration.steps = 0;
  out.steps.clear();
  for (const BatchRun& r : runs) {
    out.steps.insert(out.steps.end(), r.steps.begin(), r.steps.end());
    model::IterationMeasurement& it = out.iteration;
    it.steps += r.iteration.steps;
    keep_max(it.static_bytes, r.iteration.static_bytes);
    keep_max(it.peak_bytes, r.iteration.peak_bytes);
    keep_max(it.passes_peak_bytes, r.iteration.passes_peak_bytes);
    keep_max(it.optimizer_peak_bytes, r.iteration.optimizer_peak_bytes);
    keep_max(it.peak_reserved_bytes, r.iteration.peak_reserved_bytes);
    keep_max(it.forward_end_bytes, r.iteration.forward_end_bytes);
    add_bytes(out.layers, r.layers);
  }
  for (size_t s = 0; s < out.recompute_s.size(); ++s) {
    std::vector<double> times;
    for (const BatchRun& r : runs) times.push_back(r.recompute_s[s]);
    out.recompute_s[s] = model::median(times);
  }
  take_median_times(out);
  return out;
}

BatchRun run_batch(executor::Network& network, executor::DataSource& data, torch::optim::Optimizer& optimizer,
                   executor::MemoryTracker& memory, LayerTimer& timer, const BatchRunOptions& options) {
  try {
    return measure(network, data, optimizer, memory, timer, options);
  } catch (const std::exception& e) {
    if (!is_out_of_memory(e)) throw;
  }
  BatchRun oom;
  oom.iteration.batch = static_cast<int>(options.batch);
  oom.iteration.oom = true;
  oom.layers.resize(network.layers().size());
  oom.recompute_s.resize(network.segments().size());
  oom.returns_last_layer_output.resize(network.segments().size());
  return oom;
}

}  // namespace papaya::profiler
