#include "profiler/parameter_copies.h"

#include <torch/torch.h>

#include <unordered_map>

#include "executor/data.h"

namespace papaya::profiler {
namespace {

// Holds weak references only, so that what is alive is what autograd keeps.
class CastRecorder : public executor::LayerObserver {
 public:
  explicit CastRecorder(const executor::Network& network) {
    for (size_t i = 0; i < network.layers().size(); ++i) index[network.layers()[i]] = i;
  }

  void forward_begin(const executor::Layer&, std::vector<torch::Tensor*>&) override {}
  void saved(const executor::Layer&, const executor::Slot&, const torch::Tensor&) override {}
  void forward_end(const executor::Layer&, torch::Tensor&) override {}
  void parameter_cast(const executor::Layer& layer, const torch::Tensor& copy) override {
    casts.push_back({copy.storage().getWeakStorageImpl(), index.at(&layer), static_cast<int64_t>(copy.storage().nbytes())});
  }

  struct Cast {
    c10::weak_intrusive_ptr<c10::StorageImpl> storage;
    size_t layer;
    int64_t bytes;
  };
  std::vector<Cast> casts;
  std::unordered_map<const executor::Layer*, size_t> index;
};

}  // namespace

std::vector<int64_t> parameter_copy_bytes(executor::Network& network, int64_t batch) {
  CastRecorder recorder(network);
  const bool training = network.is_training();
  network.eval();  // batch-norm statistics stay; no dropout draws
  const torch::Device device = network.parameters().front().device();
  const executor::Batch data = executor::make_synthetic_data(network.config(), device, 0)->next(batch);
  std::vector<int64_t> bytes(network.layers().size(), 0);
  {
    const executor::ObserverGuard guard(&recorder);
    const torch::Tensor loss = network.loss(data);  // its graph holds what backward would need
    for (const auto& cast : recorder.casts) {
      if (cast.storage.use_count() > 0) bytes[cast.layer] += cast.bytes;
    }
  }
  network.train(training);
  return bytes;
}

}  // namespace papaya::profiler
