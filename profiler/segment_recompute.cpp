#include "profiler/segment_recompute.h"

#include <chrono>
#include <stdexcept>
#include <unordered_map>

#include "executor/device.h"
#include "profiler/median.h"

namespace papaya::profiler {
namespace {

// Keeps each segment's input from one forward. Every segment of the zoo hands
// its input unchanged to its first layer (a norm, a linear, a convolution),
// so the first input of the first layer seen inside a segment is the
// segment's input.
class SegmentInputs : public executor::LayerObserver {
 public:
  explicit SegmentInputs(const executor::Network& network) {
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

  std::unordered_map<std::string, torch::Tensor> inputs;
};

}  // namespace

std::vector<double> time_recompute(executor::Network& network, const executor::Batch& batch, int repeats) {
  torch::NoGradGuard no_grad;
  SegmentInputs capture(network);
  {
    executor::ObserverGuard guard(&capture);
    network.loss(batch);
  }
  const torch::Device device = network.parameters().front().device();
  std::vector<double> seconds;
  for (auto* segment : network.segments()) {
    const torch::Tensor& input = capture.inputs.at(segment->path());
    std::vector<double> runs;
    for (int r = 0; r < repeats; ++r) {
      executor::synchronize(device);
      const auto start = std::chrono::steady_clock::now();
      segment->run(input);
      executor::synchronize(device);
      runs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    seconds.push_back(median(runs));
  }
  return seconds;
}

}  // namespace papaya::profiler
