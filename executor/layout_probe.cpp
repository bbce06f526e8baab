#include "executor/layout_probe.h"

#include <map>

#include "executor/data.h"
#include "model/plan.h"

namespace papaya::executor {
namespace {

const void* storage_of(const torch::Tensor& t) { return t.storage().unsafeGetStorageImpl(); }

class StorageRecorder : public LayerObserver {
 public:
  void forward_begin(const Layer&, std::vector<torch::Tensor*>&) override {}

  void saved(const Layer& layer, const Slot& slot, const torch::Tensor& t) override {
    const std::string key = model::tensor_key(layer.path(), slot.name);
    const void* storage = storage_of(t);
    first_slot.emplace(storage, key);
    slot_storage[key] = first_slot.at(storage);
    saved_by[storage].push_back(key);
    alive.push_back(t);  // no storage is freed and its address reused during the probe
  }

  void forward_end(const Layer& layer, torch::Tensor& output) override {
    if (!output.defined()) return;
    output_storage[layer.path()] = storage_of(output);
    alive.push_back(output);
  }

  std::vector<torch::Tensor> alive;
  std::map<const void*, std::string> first_slot;
  std::map<std::string, std::string> slot_storage;
  std::map<const void*, std::vector<std::string>> saved_by;
  std::map<std::string, const void*> output_storage;
};

}  // namespace

Batch probe_forward(Network& network, int64_t batch, LayerObserver& observer) {
  const bool training = network.is_training();
  network.eval();
  const torch::Device device = network.parameters().front().device();
  Batch data = make_synthetic_data(network.config(), device, 0)->next(batch);
  {
    torch::NoGradGuard no_grad;
    ObserverGuard guard(&observer);
    network.loss(data);
  }
  network.train(training);
  return data;
}

model::NetworkLayout probe_layout(Network& network) {
  StorageRecorder recorder;
  probe_forward(network, network.config().smallest_batch(), recorder);
  model::NetworkLayout layout;
  for (const auto* segment : network.segments()) layout.segments.push_back(segment->path());
  for (const auto* layer : network.layers()) {
    model::LayoutLayer desc{layer->path(), layer->kind(), layer->slots(), layer->segment(), {}};
    for (auto& slot : desc.slots) slot.storage = recorder.slot_storage[model::tensor_key(layer->path(), slot.name)];
    const auto out = recorder.output_storage.find(layer->path());
    if (out != recorder.output_storage.end()) {
      for (const auto& key : recorder.saved_by[out->second]) {
        if (key.rfind(layer->path() + ":", 0) != 0) desc.output_saved_by.push_back(key);
      }
    }
    layout.layers.push_back(std::move(desc));
  }
  return layout;
}

}  // namespace papaya::executor
