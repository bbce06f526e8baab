// The model prices a MOM Function's backward as the native backward's
// scratch plus the tensors it unpacks (model/plan_space/internal/timeline.cpp): a
// Function that takes more working memory than its native path is priced
// short by the difference, in every plan that stores the layer's tensors
// otherwise (RMSNorm's took four input-sized temporaries more: ln_f of a GPT
// under quantize-4 peaked 15% above its prediction; the attention scores'
// took two more copies of the scores' gradient, masked and scaled apart and
// transposed for a product: a GPT with 16 heads of 64 tokens, 4% below; a
// ReLU's, its 1-bit mask cast to the gradient's dtype to multiply it: an
// OPT-style GPT under quantize-4, 4% below).
#include <gtest/gtest.h>

#include "executor/data.h"
#include "executor/memory.h"
#include "tests/executor/moms_fixture.h"

namespace papaya::executor {
namespace {

// The bytes of the tensors a layer's forward reports as saved.
class SavedBytes : public LayerObserver {
 public:
  void forward_begin(const Layer&, std::vector<torch::Tensor*>&) override {}
  void saved(const Layer&, const Slot&, const torch::Tensor& t) override { bytes += static_cast<int64_t>(t.nbytes()); }
  void forward_end(const Layer&, torch::Tensor&) override {}
  int64_t bytes = 0;
};

struct Backward {
  int64_t scratch = 0;     // peak above the start, the output's gradient included
  int64_t slot_bytes = 0;  // what the layer's slots hold raw: the most unpacking adds
  int64_t output_bytes = 0;
};

// `path`'s backward alone, on the inputs it had in a forward of the network
// under `plan`, from a gradient of ones that autograd alone holds (as in a
// step, where the engine lets it go as soon as no node needs it).
Backward backward_of(const model::NetworkConfig& config, const std::string& plan, const std::string& path) {
  testing::Planned p = testing::planned(config, plan);
  p.network->train();
  const Batch batch = make_synthetic_data(config, torch::kCPU, 0)->next(4);
  const auto inputs = testing::layer_inputs(*p.network, batch);
  for (const auto& layer : p.network->layers()) {
    if (layer->path() != path) continue;
    SavedBytes slots;
    torch::Tensor y;
    {
      const ObserverGuard guard(&slots);
      y = layer->run(inputs.at(path), batch);
    }
    MemoryTracker memory(torch::kCPU);
    const int64_t start = memory.current();
    memory.reset_peak();
    const int64_t output_bytes = static_cast<int64_t>(y.nbytes());
    y.backward(torch::ones_like(y));
    return {memory.peak() - start, slots.bytes, output_bytes};
  }
  ADD_FAILURE() << "no layer " << path;
  return {};
}

void expect_no_more_than_native(const model::NetworkConfig& config, const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    const Backward native = backward_of(config, "keep", path);
    const Backward mom = backward_of(config, "quantize-8", path);
    EXPECT_LE(mom.scratch, native.scratch + native.slot_bytes)
        << path << ": native backward " << native.scratch << " B above its start, MOM " << mom.scratch << " B, unpacking at most "
        << native.slot_bytes << " B";
  }
}

TEST(MomScratch, RmsNormsBackwardTakesNoMoreThanTheNativeOnePlusWhatItUnpacks) {
  expect_no_more_than_native(
      model::parse_network_config(
          nlohmann::json::parse(R"({"name": "llama", "family": "gpt", "layers": 1, "d_model": 64, "heads": 2, "seq_len": 16,
                                    "vocab": 20, "activation": "swiglu", "norm": "rmsnorm"})"),
          "config"),
      {"blocks.0.ln1", "ln_f"});
}

// A ReLU whose output is stored as a mask (the MLP of OPT), and attention
// whose k and v serve groups of query heads, materialized and fused.
TEST(MomScratch, ReluAndGroupedAttentionsBackwardTakeNoMoreThanTheNativeOnePlusWhatTheyUnpack) {
  for (const char* attention : {"materialized", "fused"}) {
    nlohmann::json doc = nlohmann::json::parse(R"({"name": "opt", "family": "gpt", "layers": 1, "d_model": 64, "heads": 4,
                                                    "kv_heads": 2, "seq_len": 48, "vocab": 20, "activation": "relu",
                                                    "positions": "rotary"})");
    doc["attention"] = attention;
    const bool fused = std::string(attention) == "fused";
    expect_no_more_than_native(model::parse_network_config(doc, "config"),
                               {"blocks.0.mlp.act", fused ? "blocks.0.attn.fused" : "blocks.0.attn.context"});
  }
}

// Many heads over many tokens: scores far larger than q, k and v. In a step
// the native scores' backward lets the incoming gradient go and takes one
// scores-sized temporary; alone, the caller holds that gradient, so the
// bound on the MOM path is stated directly: the gradient, one temporary,
// and q and k unpacked, their gradients and a transposed copy of one.
TEST(MomScratch, AttentionsBackwardTakesNoMoreThanTheNativeOnePlusWhatItUnpacks) {
  const model::NetworkConfig config = model::parse_network_config(
      nlohmann::json::parse(R"({"name": "heads", "family": "gpt", "layers": 1, "d_model": 64, "heads": 16, "seq_len": 64,
                                "vocab": 20, "attention": "materialized"})"),
      "config");
  expect_no_more_than_native(config, {"blocks.0.attn.scores", "blocks.0.attn.softmax", "blocks.0.attn.context"});
  const Backward mom = backward_of(config, "quantize-8", "blocks.0.attn.scores");
  const int64_t q_and_k = backward_of(config, "keep", "blocks.0.attn.scores").slot_bytes;
  EXPECT_LE(mom.scratch, 2 * mom.output_bytes + 3 * q_and_k);
}

}  // namespace
}  // namespace papaya::executor
