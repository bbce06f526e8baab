#include "profiler/layer_probe.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <unordered_map>
#include <utility>

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
  std::vector<bool> batched;  // carries the batch first (set by mark_batched)
  // The first input that is the same tensor as each (itself if none): one
  // tensor passed as several inputs stays one (nn.MultiheadAttention's
  // `query is key` takes its self-attention path).
  std::vector<size_t> same_as;
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
    for (size_t k = 0; k < inputs.size(); ++k) {
      const torch::Tensor* t = inputs[k];
      in.tensors.push_back(t->detach());
      in.needs_grad.push_back(t->requires_grad());
      in.batched.push_back(false);
      size_t first = 0;
      while (first < k && !(t->defined() && inputs[first]->unsafeGetTensorImpl() == t->unsafeGetTensorImpl())) ++first;
      in.same_as.push_back(first);
    }
  }
  void saved(const executor::Layer&, const executor::Slot&, const torch::Tensor&) override {}
  void forward_end(const executor::Layer&, torch::Tensor&) override {}

  std::vector<Inputs> layers;

 private:
  std::unordered_map<const executor::Layer*, size_t> index_;
};

// Whether `t`, of a run at `from` samples, carries the batch first: its
// first dimension is `from` there and `from + 1` in `larger`, the same
// tensor of a run one sample larger. One whose first dimension only equals
// the batch (positions [T] from torch.arange with T == from) does not.
bool batched(const torch::Tensor& t, const torch::Tensor& larger, int64_t from) {
  return t.defined() && larger.defined() && t.dim() > 0 && larger.dim() == t.dim() && t.size(0) == from &&
         larger.size(0) == from + 1;
}

// Marks which of `small`'s inputs carry the batch, against `larger`'s.
void mark_batched(std::vector<Inputs>& small, const std::vector<Inputs>& larger, int64_t from) {
  for (size_t i = 0; i < small.size(); ++i) {
    for (size_t k = 0; k < small[i].tensors.size(); ++k) {
      small[i].batched[k] = k < larger[i].tensors.size() && batched(small[i].tensors[k], larger[i].tensors[k], from);
    }
  }
}

// `grown` with its dimensions laid out in memory in the order of `like`'s
// strides: a layer or block takes other kernels, with other scratch, on a
// permuted layout (ConvNeXt's blocks take the channels-last output of a
// LayerNorm over permuted dimensions) than on a contiguous one.
torch::Tensor laid_out_as(const torch::Tensor& grown, const torch::Tensor& like) {
  if (like.is_contiguous()) return grown;
  std::vector<int64_t> order(static_cast<size_t>(like.dim()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return like.stride(a) > like.stride(b); });
  std::vector<int64_t> back(order.size());
  for (size_t k = 0; k < order.size(); ++k) back[static_cast<size_t>(order[k])] = static_cast<int64_t>(k);
  return grown.permute(order).contiguous().permute(back);
}

// `t` (batch first, `from` samples, where `carries_batch`) repeated along
// the batch to `batch` samples (its first `batch` ones where fewer), laid out
// as `t` is; a tensor without the batch (positions from torch.arange, a mask
// the batch shares) as it is.
torch::Tensor grow(const torch::Tensor& t, bool carries_batch, int64_t from, int64_t batch) {
  if (!carries_batch) return t;
  std::vector<int64_t> times(t.dim(), 1);
  times[0] = (batch + from - 1) / from;
  return laid_out_as(t.repeat(times).narrow(0, 0, batch), t);
}

std::vector<torch::Tensor> grown(const Inputs& captured, int64_t from, int64_t batch) {
  std::vector<torch::Tensor> out;
  for (size_t k = 0; k < captured.tensors.size(); ++k) {
    if (captured.same_as[k] != k) {
      out.push_back(out[captured.same_as[k]]);
      continue;
    }
    torch::Tensor t = grow(captured.tensors[k], captured.batched[k], from, batch);
    // Not a leaf, as in the network: a layer may work on it in place (an
    // imported network's ReLU(inplace=True)), which autograd refuses on a
    // view of a leaf.
    if (captured.needs_grad[k]) t = t.requires_grad_(true).clone();
    out.push_back(t);
  }
  return out;
}

// One run of `forward` with the layers marked, then backward from its
// output: the times and bytes of the layers it was run for (only those: a
// probe keeps a run's figures per round and rung, and a network may have
// thousands of layers), and the wall seconds of the whole.
struct RunFigures {
  std::vector<size_t> layers;  // network.layers() indices
  std::vector<PassTimes> times;
  std::vector<model::LayerMeasurement> bytes;
  double seconds = 0;

  size_t at(size_t layer) const {
    const auto found = std::find(layers.begin(), layers.end(), layer);
    if (found == layers.end()) throw std::logic_error("probe: a run without the figures of the layer asked for");
    return static_cast<size_t>(found - layers.begin());
  }
};

class TimedRun {
 public:
  TimedRun(LayerRecorder& recorder, LayerTimer& timer, torch::Device device)
      : recorder_(recorder), timer_(timer), device_(device) {}

  template <typename Forward>
  RunFigures operator()(const std::vector<size_t>& layers, Forward forward) {
    executor::synchronize(device_);
    timer_.start_step();
    recorder_.start_step();
    const auto start = Clock::now();
    torch::Tensor output;
    {
      executor::ObserverGuard guard(&recorder_);
      output = forward();
    }
    if (output.requires_grad()) {
      if (output.dim() == 0) {
        output.backward();
      } else {
        // Its gradient as a step hands it over: a tensor the autograd engine
        // owns and frees once the layer's first op has read it (here made
        // by a product's backward). A gradient held here through the
        // backward would lie beside the layer's own scratch.
        const torch::Tensor weights = torch::ones_like(output);
        (output * weights).sum().backward();
      }
    }
    recorder_.finish_backward();
    executor::synchronize(device_);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const std::vector<PassTimes> times = timer_.finish_step();
    const std::vector<model::LayerMeasurement> bytes = recorder_.bytes();
    RunFigures run{layers, {}, {}, seconds};
    for (size_t i : layers) {
      run.times.push_back(times.at(i));
      run.bytes.push_back(bytes.at(i));
    }
    return run;
  }

 private:
  LayerRecorder& recorder_;
  LayerTimer& timer_;
  torch::Device device_;
};

// A probe's figures, one per round.
struct Samples {
  bool out_of_memory = false;
  std::vector<RunFigures> layers;                     // per round
  std::vector<double> between;                        // a segment's work between its layers at the probe batch
  std::vector<std::vector<double>> between_profiled;  // per ProbeOptions::profiled batch, as `between`
  std::vector<double> recompute;                      // what checkpointing a segment adds, at the probe batch
  std::vector<std::vector<RunFigures>> rungs;         // per rung, per round: as `layers`
  size_t rungs_fit = SIZE_MAX;                        // the rungs below the first that ran out of memory
};

// Layer `layer`'s figures in `runs` (one per round) at `batch`: each one's median.
model::ProbeRung medians(const std::vector<RunFigures>& runs, size_t layer, int64_t batch) {
  std::vector<double> forward, backward, forward_headroom, backward_headroom;
  for (const RunFigures& run : runs) {
    const size_t k = run.at(layer);
    forward.push_back(run.times[k].forward_s);
    backward.push_back(run.times[k].backward_s);
    const model::LayerMeasurement& m = run.bytes[k];
    forward_headroom.push_back(static_cast<double>(m.forward_peak_bytes - m.forward_start_bytes));
    backward_headroom.push_back(static_cast<double>(m.backward_peak_bytes - m.backward_start_bytes));
  }
  return {batch, std::llround(model::median(forward_headroom)), std::llround(model::median(backward_headroom)),
          model::median(forward), model::median(backward)};
}

// Runs `probe` unless it ran out of memory before; marks it so when it does.
template <typename Probe>
void sample(Samples& samples, Probe probe) {
  if (samples.out_of_memory) return;
  try {
    probe();
  } catch (const std::exception& e) {
    if (!is_out_of_memory(e)) throw;
    samples.out_of_memory = true;
  }
}

// The rungs' batches: the two largest profiled ones and the doublings of
// the largest below the probe batch.
std::vector<int64_t> rung_batches(const ProbeOptions& options) {
  std::vector<int64_t> batches;
  const size_t n = options.profiled.size();
  if (n >= 2 && options.profiled[n - 2] < options.from) batches.push_back(options.profiled[n - 2]);
  for (int64_t b = options.from; b < options.batch; b *= 2) batches.push_back(b);
  return batches;
}

// Runs `rung` at each of `rungs` in turn (up to one that ran out of memory
// in a round before), adding its figures to `samples`; the first that runs
// out of memory ends the climb, in this round and the next.
template <typename Rung>
void climb(Samples& samples, size_t rungs, Rung rung) {
  samples.rungs.resize(rungs);
  size_t k = 0;
  try {
    for (; k < std::min(samples.rungs_fit, rungs); ++k) samples.rungs[k].push_back(rung(k));
  } catch (const std::exception& e) {
    if (!is_out_of_memory(e)) throw;
    samples.rungs_fit = k;
  }
}

}  // namespace

LayerProbes probe_layers(executor::Network& network, executor::DataSource& data, executor::MemoryTracker& memory,
                         LayerTimer& timer, const ProbeOptions& options) {
  if (options.batch <= options.from || options.from < 1 || options.rounds < 1) {
    throw std::logic_error("probe_layers: the probe batch must be larger than a positive batch to grow from");
  }
  network.train();
  // The inputs at `from` samples, and at one more to tell which carry the batch.
  const executor::Batch small = data.next(options.from), larger = data.next(options.from + 1);
  InputCapture capture(network), capture_larger(network);
  for (auto [run, observer] : {std::pair{&small, &capture}, std::pair{&larger, &capture_larger}}) {
    executor::ObserverGuard guard(observer);
    network.loss(*run);  // the graph goes with the loss; the captured inputs stay
  }
  mark_batched(capture.layers, capture_larger.layers, options.from);
  // The network's batch at `b` samples, grown from `small`.
  const auto batch_of = [&](int64_t b) {
    const auto grow_batch = [&](const torch::Tensor& t, const torch::Tensor& in_larger) {
      return grow(t, batched(t, in_larger, options.from), options.from, b);
    };
    executor::Batch out;
    out.input = grow_batch(small.input, larger.input);
    if (small.target.defined()) out.target = grow_batch(small.target, larger.target);
    for (size_t k = 0; k < small.arguments.size(); ++k) {
      out.arguments.push_back(
          grow_batch(small.arguments[k], k < larger.arguments.size() ? larger.arguments[k] : torch::Tensor()));
    }
    return out;
  };
  const executor::Batch batch = batch_of(options.batch);
  const auto& layers = network.layers();
  const auto& segments = network.segments();
  std::vector<std::vector<size_t>> members(segments.size());
  std::vector<Inputs> segment_inputs(segments.size());
  for (size_t s = 0; s < segments.size(); ++s) {
    for (size_t i = 0; i < layers.size(); ++i) {
      if (layers[i]->segment() == segments[s]->path()) members[s].push_back(i);
    }
    // The segment hands its input to its first layer (segment_recompute.h).
    if (members[s].empty() || capture.layers[members[s].front()].tensors.empty()) {
      throw std::logic_error("segment " + segments[s]->path() + " has no first layer that takes its input");
    }
    const Inputs& first = capture.layers[members[s].front()];
    segment_inputs[s] = Inputs{{first.tensors.front()}, {first.needs_grad.front()}, {first.batched.front()}, {0}};
  }
  LayerRecorder recorder(network, timer, memory, options.memory_limit);
  TimedRun timed(recorder, timer, small.input.device());
  // One run of segment `s`, or of layer `i` alone on the network's batch
  // `at`, at `b` samples.
  const auto run_segment = [&](size_t s, int64_t b) {
    std::vector<torch::Tensor> in = grown(segment_inputs[s], options.from, b);
    return timed(members[s], [&] { return segments[s]->run_layers(in.front()); });
  };
  const auto run_layer = [&](size_t i, const executor::Batch& at, int64_t b) {
    std::vector<torch::Tensor> in = grown(capture.layers[i], options.from, b);
    return timed({i}, [&] { return layers[i]->run(in, at); });
  };

  // The rungs: the network's batch grown to each once.
  const std::vector<int64_t> at_rung = options.bytes_only ? std::vector<int64_t>{} : rung_batches(options);
  std::vector<executor::Batch> rung_data;
  for (int64_t b : at_rung) rung_data.push_back(batch_of(b));

  std::vector<Samples> segment_samples(segments.size());
  std::vector<Samples> layer_samples(layers.size());  // layers outside segments
  const int rounds = options.bytes_only ? 1 : options.rounds;
  for (int round = 0; round < rounds; ++round) {
    for (size_t s = 0; s < segments.size(); ++s) {
      executor::Segment& segment = *segments[s];
      // A run at `b`: each layer's times, and the rest of the segment's.
      const auto run_at = [&](int64_t b) {
        RunFigures run = run_segment(s, b);
        for (const PassTimes& times : run.times) run.seconds -= times.forward_s + times.backward_s;
        return run;
      };
      Samples& samples = segment_samples[s];
      sample(samples, [&] {
        RunFigures run = run_at(options.batch);
        if (options.bytes_only) {
          samples.layers.push_back(std::move(run));
          return;
        }
        const double between = run.seconds;
        samples.between_profiled.resize(options.profiled.size());
        for (size_t k = 0; k < options.profiled.size(); ++k)
          samples.between_profiled[k].push_back(run_at(options.profiled[k]).seconds);
        samples.recompute.push_back(time_recompute(
            segment, grow(segment_inputs[s].tensors.front(), segment_inputs[s].batched.front(), options.from, options.batch), 1));
        samples.layers.push_back(std::move(run));
        samples.between.push_back(between);
        climb(samples, at_rung.size(), [&](size_t k) { return run_segment(s, at_rung[k]); });
      });
      if (options.on_probe) options.on_probe();
    }
    for (size_t i = 0; i < layers.size(); ++i) {
      if (!layers[i]->segment().empty() || !layers[i]->runs_alone()) continue;
      Samples& samples = layer_samples[i];
      sample(samples, [&] {
        samples.layers.push_back(run_layer(i, batch, options.batch));
        climb(samples, at_rung.size(), [&](size_t k) { return run_layer(i, rung_data[k], at_rung[k]); });
      });
      if (options.on_probe) options.on_probe();
    }
  }
  // Each layer's rungs, from its own samples or its segment's.
  const auto rungs_of = [&](const Samples& samples, size_t layer) {
    std::vector<model::ProbeRung> out;
    for (size_t k = 0; k < samples.rungs.size() && !samples.rungs[k].empty(); ++k)
      out.push_back(medians(samples.rungs[k], layer, at_rung[k]));
    return out;
  };

  LayerProbes probes;
  probes.layers.resize(layers.size());
  probes.segments.resize(segments.size());
  probes.between_s.resize(segments.size());
  // A layer's probe from the runs of `samples` (its own or its segment's).
  const auto probe_of = [&](const Samples& samples, size_t layer) {
    const model::ProbeRung at = medians(samples.layers, layer, options.batch);
    return model::LayerProbe{at.forward_s, at.backward_s, at.forward_headroom_bytes, at.backward_headroom_bytes,
                             rungs_of(samples, layer)};
  };
  for (size_t s = 0; s < segments.size(); ++s) {
    const Samples& samples = segment_samples[s];
    if (samples.out_of_memory) continue;
    for (size_t i : members[s]) probes.layers[i] = probe_of(samples, i);
    if (options.bytes_only) continue;
    probes.segments[s] = model::SegmentProbe{model::median(samples.recompute), model::median(samples.between)};
    for (const auto& between : samples.between_profiled) probes.between_s[s].push_back(model::median(between));
  }
  for (size_t i = 0; i < layers.size(); ++i) {
    if (!layer_samples[i].out_of_memory && !layer_samples[i].layers.empty()) probes.layers[i] = probe_of(layer_samples[i], i);
  }
  return probes;
}

}  // namespace papaya::profiler
