#include "profiler/segment_recompute.h"

#include <chrono>
#include <stdexcept>

#include "executor/device.h"
#include "model/median.h"

namespace papaya::profiler {
namespace {

// Keeps each segment's input from one forward. Every segment of the zoo hands
// its input unchanged to its first layer (a norm, a linear, a convolution),
// so the first input of the first layer seen inside a segment is the
// segment's input.
class InputCapture : public executor::LayerObserver {
 public:
  explicit InputCapture(const executor::Network& network) {
    for (const auto* segment : network.segments()) inputs[segment->path()];
  }

  void forward_begin(const executor::Layer& layer, std::vector<torch::Tensor*>& in) override {
    if (layer.segment().empty()) return;
    torch::Tensor& slot = inputs.at(layer.segment());
    if (slot.defined()) return;
    if (in.empty()) throw std::logic_error("the first layer of segment " + layer.segment() + " takes no input");
    slot = *in.front();
  }
  void saved(const executor::Layer&, const executor::Slot&, const torch::Tensor&) override {}
  void forward_end(const executor::Layer&, torch::Tensor&) override {}

  SegmentInputs inputs;
};

// The output of the last layer that ran inside `segment`.
class LastOutput : public executor::LayerObserver {
 public:
  explicit LastOutput(std::string segment) : segment_(std::move(segment)) {}

  void forward_begin(const executor::Layer&, std::vector<torch::Tensor*>&) override {}
  void saved(const executor::Layer&, const executor::Slot&, const torch::Tensor&) override {}
  void forward_end(const executor::Layer& layer, torch::Tensor& output) override {
    if (layer.segment() == segment_) last = output;
  }

  torch::Tensor last;

 private:
  std::string segment_;
};

// Seconds of one forward of `segment` on `x`, recording autograd's graph as
// a checkpoint's recompute does.
double recompute_forward(executor::Segment& segment, const torch::Tensor& x) {
  executor::synchronize(x.device());
  const auto start = std::chrono::steady_clock::now();
  segment.run_layers(x);
  executor::synchronize(x.device());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

SegmentInputs capture_segment_inputs(executor::Network& network, const executor::Batch& batch) {
  torch::NoGradGuard no_grad;
  InputCapture capture(network);
  executor::ObserverGuard guard(&capture);
  network.loss(batch);
  return std::move(capture.inputs);
}

double time_recompute(executor::Segment& segment, const torch::Tensor& input, int repeats) {
  const torch::AutoGradMode with_grad(true);
  const torch::Tensor x = input.detach().requires_grad_(true);
  std::vector<double> seconds;
  for (int r = 0; r < repeats; ++r) seconds.push_back(recompute_forward(segment, x));
  return model::median(seconds);
}

std::vector<double> time_recompute(executor::Network& network, const SegmentInputs& inputs, int repeats) {
  std::vector<double> seconds;
  for (auto* segment : network.segments()) seconds.push_back(time_recompute(*segment, inputs.at(segment->path()), repeats));
  return seconds;
}

std::vector<bool> returns_last_layer_output(executor::Network& network, const SegmentInputs& inputs) {
  torch::NoGradGuard no_grad;
  std::vector<bool> out;
  for (auto* segment : network.segments()) {
    LastOutput last(segment->path());
    executor::ObserverGuard guard(&last);
    const torch::Tensor output = segment->run(inputs.at(segment->path()));
    out.push_back(last.last.defined() && output.is_alias_of(last.last));
  }
  return out;
}

}  // namespace papaya::profiler
