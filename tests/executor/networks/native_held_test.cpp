// What a layer's native (keep) path leaves to autograd is what it declares:
// its slots, and the parameter copies LibTorch keeps (Layer::cast). The
// performance model prices every other strategy as byte differences from
// the keep step's measured figures, so a tensor autograd keeps beside the
// slots is held under keep and silently dropped on the MOM path, and the
// model gets every plan that touches the layer wrong by its size (RMSNorm's
// mean() kept its squared input: 2 MiB of llama-4x128's 4 blocks at batch
// 32, which quantize-4 was predicted to keep and did not). Each layer of each
// network runs alone on the inputs it had in a training forward, under the
// allocator's count.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "executor/data.h"
#include "executor/memory.h"
#include "executor/networks/network.h"
#include "executor/networks/zoo.h"
#include "model/catalog/network_config.h"
#include "tests/executor/moms_fixture.h"

namespace papaya::executor {
namespace {

using Storage = c10::weak_intrusive_ptr<c10::StorageImpl>;
const c10::StorageImpl* storage_of(const torch::Tensor& t) { return t.storage().unsafeGetStorageImpl(); }

// The storages a layer's forward reports as saved and cast, by weak
// reference: what is alive afterwards is what autograd (or the output) keeps.
class HeldRecorder : public LayerObserver {
 public:
  void forward_begin(const Layer&, std::vector<torch::Tensor*>&) override {}
  void saved(const Layer&, const Slot& slot, const torch::Tensor& t) override {
    slots.push_back({slot.name, t.storage().getWeakStorageImpl()});
  }
  void forward_end(const Layer&, torch::Tensor&) override {}
  void parameter_cast(const Layer&, const torch::Tensor& copy) override { casts.push_back(copy.storage().getWeakStorageImpl()); }
  std::vector<std::pair<std::string, Storage>> slots;
  std::vector<Storage> casts;
};

// What each layer of the network keeps, run alone on its training-forward
// inputs at this batch, beyond its output, declared slots and parameter
// copies (bytes, by layer path).
std::map<std::string, int64_t> undeclared_bytes(const model::NetworkConfig& config, torch::ScalarType dtype, int64_t batch_size) {
  torch::manual_seed(0);
  auto network = build_network(config);
  network->set_precision({dtype});
  network->train();
  Batch batch = make_synthetic_data(config, torch::kCPU, 0)->next(batch_size);
  // A language network's targets are a slice of its tokens, which the loss
  // flattens into a copy it keeps on every path alike: data, not an activation.
  batch.target = batch.target.contiguous();
  const auto inputs = testing::layer_inputs(*network, batch);
  std::map<std::string, int64_t> undeclared;
  for (const auto& layer : network->layers()) {
    const std::vector<torch::Tensor>& in = inputs.at(layer->path());
    std::set<const c10::StorageImpl*> counted;
    for (const auto& t : in) counted.insert(storage_of(t));
    for (const auto& t : {batch.input, batch.target}) counted.insert(storage_of(t));
    for (const auto& p : layer->parameters(/*recurse=*/false)) counted.insert(storage_of(p));

    HeldRecorder held;
    MemoryTracker memory(torch::kCPU);
    const int64_t before = memory.current();
    torch::Tensor output;
    {
      const ObserverGuard guard(&held);
      output = layer->run(in, batch);
    }
    int64_t expected = 0;
    const auto count = [&](const c10::StorageImpl* s) {
      if (counted.insert(s).second) expected += static_cast<int64_t>(s->nbytes());
    };
    count(storage_of(output));
    for (const auto& [slot, storage] : held.slots) {
      const auto strong = storage.lock();
      EXPECT_TRUE(strong) << layer->path() << ":" << slot << " is declared but not kept";
      if (strong) count(strong.get());
    }
    for (const auto& cast : held.casts) {
      if (const auto strong = cast.lock()) count(strong.get());
    }
    undeclared[layer->path()] = memory.current() - before - expected;
  }
  return undeclared;
}

class NativeHeld : public ::testing::TestWithParam<std::string> {};

// Per-layer constants (batch norm's batch statistics, a loss's total weight)
// are measured in the keep step and kept alike on the MOM path; what must
// not be there is anything that grows with the batch.
TEST_P(NativeHeld, NothingBatchSizedBeyondSlotsAndParameterCopies) {
  const model::NetworkConfig config = model::parse_network_config(nlohmann::json::parse(GetParam()), "config");
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    const auto at_2 = undeclared_bytes(config, dtype, 2);
    const auto at_4 = undeclared_bytes(config, dtype, 4);
    for (const auto& [path, bytes] : at_4) {
      EXPECT_EQ(bytes, at_2.at(path)) << path << " (" << c10::toString(dtype) << ") keeps " << at_2.at(path)
                                      << " bytes beyond its slots and parameter copies at batch 2, " << bytes << " at batch 4";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    EveryKind, NativeHeld,
    ::testing::Values(
        R"({"name": "gpt", "family": "gpt", "layers": 1, "d_model": 16, "heads": 2, "seq_len": 8, "vocab": 20, "dropout": 0.1})",
        R"({"name": "llama", "family": "gpt", "layers": 1, "d_model": 16, "heads": 2, "seq_len": 8, "vocab": 20,
            "activation": "swiglu", "norm": "rmsnorm"})",
        R"({"name": "gqa", "family": "gpt", "layers": 1, "d_model": 16, "heads": 4, "kv_heads": 2, "seq_len": 8, "vocab": 20,
            "activation": "swiglu", "norm": "rmsnorm", "positions": "rotary", "tied_head": false})",
        R"({"name": "lora", "family": "gpt", "layers": 2, "d_model": 16, "heads": 4, "kv_heads": 2, "seq_len": 8, "vocab": 20,
            "activation": "swiglu", "norm": "rmsnorm", "positions": "rotary", "tied_head": false, "fused_qkv": false,
            "lora": {"rank": 2, "dropout": 0.1, "targets": ["q", "v", "down"]}})",
        R"({"name": "qlora", "family": "gpt", "layers": 2, "d_model": 16, "heads": 4, "kv_heads": 2, "seq_len": 8, "vocab": 20,
            "activation": "swiglu", "norm": "rmsnorm", "positions": "rotary", "tied_head": false, "fused_qkv": false,
            "lora": {"rank": 2, "targets": ["q", "v", "down"], "base_weights": "nf4"}})",
        R"({"name": "moe", "family": "gpt", "layers": 2, "d_model": 16, "heads": 4, "kv_heads": 2, "seq_len": 8, "vocab": 20,
            "activation": "swiglu", "norm": "rmsnorm", "positions": "rotary", "tied_head": false, "fused_qkv": false,
            "moe": {"experts": 3, "experts_per_token": 2, "expert_hidden": 12, "shared_hidden": 8, "shared_gate": true}})",
        R"({"name": "neox", "family": "gpt", "layers": 1, "d_model": 16, "heads": 2, "seq_len": 8, "vocab": 20,
            "positions": "rotary", "rotary_fraction": 0.25, "parallel_residual": true, "activation": "relu", "dropout": 0.1,
            "attention_dropout": 0})",
        R"({"name": "bert", "family": "bert", "layers": 1, "d_model": 16, "heads": 2, "seq_len": 8, "vocab": 20,
            "activation": "silu", "dropout": 0.1, "classes": 3, "token_types": 2, "pooler": true})",
        R"({"name": "vit", "family": "vit", "layers": 1, "d_model": 16, "heads": 2, "image_size": 16, "patch": 8,
            "channels": 3, "classes": 3})",
        R"({"name": "basic", "family": "resnet", "block": "basic", "stages": [1, 1], "width": 4, "image_size": 16, "channels": 3,
            "classes": 3})",
        R"({"name": "bottleneck", "family": "resnet", "block": "bottleneck", "stages": [1, 1], "width": 4, "image_size": 16,
            "channels": 3, "classes": 3})",
        R"({"name": "mlp", "family": "mlp", "input": 6, "hidden": [8, 8], "classes": 3, "activation": "relu"})"));

}  // namespace
}  // namespace papaya::executor
