#include "profiler/forward_lifetimes.h"

#include <torch/torch.h>

#include <unordered_map>

#include "executor/layout_probe.h"

namespace papaya::profiler {
namespace {

// Holds weak references only: a storage is freed when the code drops it,
// and its StorageImpl (so its address) is not reused while watched.
class LifetimeRecorder : public executor::LayerObserver {
 public:
  explicit LifetimeRecorder(const executor::Network& network) : last(network.layers().size()) {
    for (size_t i = 0; i < network.layers().size(); ++i) index[network.layers()[i]] = i;
  }

  void forward_begin(const executor::Layer& layer, std::vector<torch::Tensor*>&) override { mark_alive(index.at(&layer)); }

  void saved(const executor::Layer& layer, const executor::Slot& slot, const torch::Tensor& tensor) override {
    const size_t i = index.at(&layer);
    last[i][slot.name] = static_cast<int>(i);
    watched.push_back({tensor.storage().getWeakStorageImpl(), i, slot.name});
  }

  void forward_end(const executor::Layer& layer, torch::Tensor&) override { mark_alive(index.at(&layer)); }

  struct Watched {
    c10::weak_intrusive_ptr<c10::StorageImpl> storage;
    size_t layer;
    std::string slot;
  };
  std::vector<std::map<std::string, int>> last;
  std::vector<Watched> watched;
  std::unordered_map<const executor::Layer*, size_t> index;

 private:
  // A storage is allocated while someone holds a strong reference.
  void mark_alive(size_t now) {
    for (const Watched& w : watched) {
      if (w.storage.use_count() > 0) last[w.layer][w.slot] = static_cast<int>(now);
    }
  }
};

}  // namespace

std::vector<std::map<std::string, int>> last_forward_uses(executor::Network& network, int64_t batch) {
  LifetimeRecorder recorder(network);
  executor::probe_forward(network, batch, recorder);
  return std::move(recorder.last);
}

}  // namespace papaya::profiler
