#include "profiler/layer_probe.h"

#include <chrono>
#include <stdexcept>
#include <unordered_map>

#include "executor/device.h"
#include "model/median.h"
#include "profiler/layer_recorder.h"
#include "profiler/out_of_memory.h"
#include "profiler/segment_recompute.h"

namespace papaya::profiler {
namespace {

using Clock = std::chrono::steady_clock;

struct Inputs {
  std::vector<torch::Tensor> tensors;  // detached
  std::vector<bool> needs_grad;
};

// Every layer's inputs in one forward with autograd: what each was given and
// whether it needed a gradient there.
class InputCapture : public executor::LayerObserver {
 public:
  explicit InputCapture(const executor::Network& network) : layers(network.layers().size()) {
    for (size_t i = 0; i < network.layers().size(); ++i) index_[network.layers()[i]] = i;
  }

  void forward_begin(const executor::Layer& layer, std::vector<torch::Tensor*>& inputs) override {
    Inputs& in = layers.at(index_.at(&layer));
    if (!in.tensors.empty()) throw std::logic_error("layer " + layer.path() + " is called twice in one forward");
    for (const torch::Tensor* t : inputs) {
      in.tensors.push_back(t->detach());
      in.needs_grad.push_back(t->requires_grad());
    }
  }
  void saved(const executor::Layer&, const executor::Slot&, const torch::Tensor&) override {}
  void forward_end(const executor::Layer&, torch::Tensor&) override {}

  std::vector<Inputs> layers;

 private:
  std::unordered_map<const executor::Layer*, size_t> index_;
};

// `t` (batch first, `from` samples) repeated along the batch to `batch`
// samples (its first `batch` ones where fewer).
torch::Tensor grow(const torch::Tensor& t, int64_t from, int64_t batch, const std::string& what) {
  if (t.dim() == 0 || t.size(0) != from) throw std::logic_error(what + " does not have the batch as its first dimension");
  std::vector<int64_t> times(t.dim(), 1);
  times[0] = (batch + from - 1) / from;
  return t.repeat(times).narrow(0, 0, batch);
}

std::vector<torch::Tensor> grown(const Inputs& captured, int64_t from, int64_t batch, const std::string& what) {
  std::vector<torch::Tensor> out;
  for (size_t k = 0; k < captured.tensors.size(); ++k) {
    torch::Tensor t = grow(captured.tensors[k], from, batch, what);
    if (captured.needs_grad[k]) t.requires_grad_(true);
    out.push_back(t);
  }
  return out;
}

// Runs `forward` with the layers marked, then backward from its output.
class TimedRuns {
 public:
  TimedRuns(LayerRecorder& recorder, LayerTimer& timer, torch::Device device)
      : recorder_(recorder), timer_(timer), device_(device) {}

  // One untimed run, then `repeats` timed: per run, each layer's times and
  // the wall seconds of the whole.
  template <typename Forward>
  std::vector<std::pair<std::vector<PassTimes>, double>> run(Forward forward, std::vector<torch::Tensor>& leaves, int repeats) {
    std::vector<std::pair<std::vector<PassTimes>, double>> runs;
    for (int r = 0; r <= repeats; ++r) {
      for (torch::Tensor& t : leaves) {
        if (t.requires_grad()) t.mutable_grad() = torch::Tensor();
      }
      executor::synchronize(device_);
      timer_.start_step();
      recorder_.start_step();
      const auto start = Clock::now();
      torch::Tensor output;
      {
        executor::ObserverGuard guard(&recorder_);
        output = forward();
      }
      if (output.requires_grad()) output.dim() == 0 ? output.backward() : output.backward(torch::ones_like(output));
      recorder_.finish_backward();
      executor::synchronize(device_);
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      std::vector<PassTimes> times = timer_.finish_step();
      if (r > 0) runs.emplace_back(std::move(times), seconds);
    }
    return runs;
  }

 private:
  LayerRecorder& recorder_;
  LayerTimer& timer_;
  torch::Device device_;
};

PassTimes median_times(const std::vector<std::pair<std::vector<PassTimes>, double>>& runs, size_t layer) {
  std::vector<double> forward, backward;
  for (const auto& [times, seconds] : runs) {
    forward.push_back(times.at(layer).forward_s);
    backward.push_back(times.at(layer).backward_s);
  }
  return {model::median(forward), model::median(backward)};
}

}  // namespace

LayerProbes probe_layers(executor::Network& network, executor::DataSource& data, executor::MemoryTracker& memory,
                         LayerTimer& timer, const ProbeOptions& options) {
  if (options.batch <= options.from || options.from < 1 || options.repeats < 1) {
    throw std::logic_error("probe_layers: the probe batch must be larger than a positive batch to grow from");
  }
  network.train();
  const executor::Batch small = data.next(options.from);
  InputCapture capture(network);
  {
    executor::ObserverGuard guard(&capture);
    network.loss(small);  // the graph goes with the loss; the captured inputs stay
  }
  const executor::Batch batch{grow(small.input, options.from, options.batch, "the batch's input"),
                              grow(small.target, options.from, options.batch, "the batch's target")};
  const auto& layers = network.layers();
  LayerProbes probes;
  probes.layers.resize(layers.size());
  probes.segments.resize(network.segments().size());
  probes.between_s.resize(network.segments().size());
  LayerRecorder recorder(network, timer, memory, options.memory_limit);
  TimedRuns timed(recorder, timer, small.input.device());

  for (size_t s = 0; s < network.segments().size(); ++s) {
    executor::Segment& segment = *network.segments()[s];
    std::vector<size_t> members;
    for (size_t i = 0; i < layers.size(); ++i) {
      if (layers[i]->segment() == segment.path()) members.push_back(i);
    }
    // The segment hands its input to its first layer (segment_recompute.h).
    if (members.empty() || capture.layers[members.front()].tensors.empty()) {
      throw std::logic_error("segment " + segment.path() + " has no first layer that takes its input");
    }
    Inputs input;
    input.tensors = {capture.layers[members.front()].tensors.front()};
    input.needs_grad = {capture.layers[members.front()].needs_grad.front()};
    // Its runs at `b`: each layer's times, and the median of the rest.
    const auto at = [&](int64_t b) {
      std::vector<torch::Tensor> in = grown(input, options.from, b, "the input of segment " + segment.path());
      const auto runs = timed.run([&] { return segment.run_layers(in.front()); }, in, options.repeats);
      std::vector<double> between;
      for (const auto& [times, seconds] : runs) {
        double layer_seconds = 0;
        for (size_t i : members) layer_seconds += times[i].forward_s + times[i].backward_s;
        between.push_back(seconds - layer_seconds);
      }
      return std::make_pair(runs, model::median(between));
    };
    try {
      const auto [runs, between] = at(options.batch);
      const torch::Tensor in = grow(input.tensors.front(), options.from, options.batch, "the input of segment " + segment.path());
      std::vector<double> between_profiled;
      for (int64_t b : options.profiled) between_profiled.push_back(at(b).second);
      probes.segments[s] = model::SegmentProbe{time_recompute(segment, in, options.repeats), between};
      probes.between_s[s] = between_profiled;
      for (size_t i : members) probes.layers[i] = median_times(runs, i);
    } catch (const std::exception& e) {
      if (!is_out_of_memory(e)) throw;
    }
    if (options.on_probe) options.on_probe();
  }

  for (size_t i = 0; i < layers.size(); ++i) {
    if (!layers[i]->segment().empty()) continue;
    try {
      std::vector<torch::Tensor> in = grown(capture.layers[i], options.from, options.batch, "an input of layer " + layers[i]->path());
      probes.layers[i] = median_times(timed.run([&] { return layers[i]->run(in, batch); }, in, options.repeats), i);
    } catch (const std::exception& e) {
      if (!is_out_of_memory(e)) throw;
    }
    if (options.on_probe) options.on_probe();
  }
  return probes;
}

}  // namespace papaya::profiler
