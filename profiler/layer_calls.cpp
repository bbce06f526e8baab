#include "profiler/layer_calls.h"

#include <stdexcept>
#include <unordered_map>

#include "executor/layout_probe.h"

namespace papaya::profiler {
namespace {

bool shares_storage(const torch::Tensor& a, const torch::Tensor& b) {
  return a.defined() && b.defined() && a.storage().unsafeGetStorageImpl() == b.storage().unsafeGetStorageImpl();
}

class CallRecorder : public executor::LayerObserver {
 public:
  explicit CallRecorder(const executor::Network& network)
      : calls(network.layers().size()), seen(calls.size(), 0), ended(calls.size(), false) {
    for (size_t i = 0; i < network.layers().size(); ++i) index[network.layers()[i]] = i;
  }

  void forward_begin(const executor::Layer& layer, std::vector<torch::Tensor*>& inputs) override {
    const size_t i = index.at(&layer);
    if (++seen[i] > 1) throw std::logic_error("layer " + layer.path() + " is called more than once in a forward");
    for (const auto* input : inputs) calls[i].inputs.push_back(*input);
  }

  void saved(const executor::Layer& layer, const executor::Slot& slot, const torch::Tensor& tensor) override {
    const size_t i = index.at(&layer);
    calls[i].saved.emplace_back(slot.name, tensor);
    if (ended[i]) calls[i].after_forward_slots.push_back(slot.name);
  }

  void forward_end(const executor::Layer& layer, torch::Tensor& output) override {
    const size_t i = index.at(&layer);
    calls[i].output = output;
    ended[i] = true;
  }

  std::vector<LayerCall> calls;
  std::vector<int> seen;
  std::vector<bool> ended;
  std::unordered_map<const executor::Layer*, size_t> index;
};

}  // namespace

std::vector<LayerCall> record_calls(executor::Network& network, int64_t batch) {
  CallRecorder recorder(network);
  const executor::Batch data = executor::probe_forward(network, batch, recorder);
  for (auto& call : recorder.calls) {
    for (const auto& [name, tensor] : call.saved) {
      if (shares_storage(tensor, data.input) || shares_storage(tensor, data.target)) call.data_slots.push_back(name);
    }
  }
  const auto& layers = network.layers();
  for (size_t i = 0; i < layers.size(); ++i) {
    if (!recorder.seen[i]) throw std::logic_error("layer " + layers[i]->path() + " is not called in a forward");
    for (const auto& slot : layers[i]->slots()) {
      bool found = false;
      for (const auto& [name, tensor] : recorder.calls[i].saved) found = found || name == slot.name;
      if (!found) throw std::logic_error("layer " + layers[i]->path() + " does not save its slot " + slot.name);
    }
  }
  return std::move(recorder.calls);
}

}  // namespace papaya::profiler
