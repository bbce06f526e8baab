// torch.autocast's policy in the executor: the precisions by name, what each
// kind of layer computes in and saves, and gradients under it and its plans.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "executor/data.h"
#include "executor/precision.h"
#include "model/error.h"
#include "model/plan.h"
#include "tests/executor/moms_fixture.h"
#include "tests/support/test_names.h"

namespace papaya::executor {
namespace {

const torch::Device cpu(torch::kCPU);
const Precision amp_bf16{torch::kBFloat16, true};

TEST(ResolvePrecision, NamesATypeAndWhetherItIsAutocast) {
  const auto expect = [](const std::string& name, torch::ScalarType dtype, bool autocast) {
    const Precision p = resolve_precision(name, cpu);
    EXPECT_EQ(p.dtype, dtype) << name;
    EXPECT_EQ(p.autocast, autocast) << name;
  };
  expect("fp32", torch::kFloat, false);
  expect("bf16", torch::kBFloat16, false);
  expect("amp-bf16", torch::kBFloat16, true);
  EXPECT_THROW(resolve_precision("fp16", cpu), InputError);
  EXPECT_THROW(resolve_precision("amp", cpu), InputError);
}

// LibTorch 1.13 has no fp16 matmul on a CPU (2.x has): amp-fp16 is then an
// input error that says what to use instead, never a crash mid-training.
TEST(ResolvePrecision, AmpFp16NeedsAnFp16Matmul) {
  bool fp16_matmul = true;
  try {
    const torch::Tensor one = torch::ones({1, 1}, torch::kHalf);
    (void)one.mm(one);
  } catch (const c10::Error&) {
    fp16_matmul = false;
  }
  if (fp16_matmul) {
    const Precision p = resolve_precision("amp-fp16", cpu);
    EXPECT_EQ(p.dtype, torch::kHalf);
    EXPECT_TRUE(p.autocast);
    return;
  }
  try {
    resolve_precision("amp-fp16", cpu);
    FAIL() << "amp-fp16 resolved on a CPU without an fp16 matmul";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("amp-bf16"));
  }
}

// The dtypes of the tensors each layer saves, by "kind:slot".
class SavedDtypes : public LayerObserver {
 public:
  void forward_begin(const Layer&, std::vector<torch::Tensor*>&) override {}
  void saved(const Layer& layer, const Slot& slot, const torch::Tensor& tensor) override {
    dtypes[std::string(model::to_string(layer.kind())) + ":" + slot.name].insert(tensor.scalar_type());
  }
  void forward_end(const Layer&, torch::Tensor&) override {}
  std::map<std::string, std::set<torch::ScalarType>> dtypes;
};

std::map<std::string, std::set<torch::ScalarType>> saved_dtypes(const model::NetworkConfig& config, const Precision& precision) {
  const auto planned = testing::planned(config, "keep");
  planned.network->set_precision(precision);
  SavedDtypes observer;
  const ObserverGuard guard(&observer);
  testing::step(*planned.network, make_synthetic_data(config, cpu, 0)->next(2));
  return observer.dtypes;
}

// As HuggingFace's networks under torch.autocast save them: the inputs of
// matmuls as half-type copies, norms' inputs (the fp32 residual stream),
// softmax's output and the log-probabilities in fp32, and an activation's
// input in the type of the matmul before it; fused attention's operands and
// output in the half type (scaled_dot_product_attention runs in it), its
// log-sum-exp in fp32.
TEST(Autocast, MatmulsSaveHalfCopiesNormsSoftmaxAndLossesFp32) {
  using S = std::set<torch::ScalarType>;
  const S half{torch::kBFloat16}, fp32{torch::kFloat};
  const auto expect = [](const std::map<std::string, S>& saved, std::initializer_list<const char*> slots, const S& dtypes) {
    for (const char* slot : slots) {
      ASSERT_TRUE(saved.count(slot)) << slot;
      EXPECT_EQ(saved.at(slot), dtypes) << slot;
    }
  };
  const model::NetworkConfig gpt_tiny = testing::tiny_config("gpt-tiny", 0.1);
  const auto gpt = saved_dtypes(gpt_tiny, amp_bf16);
  expect(gpt,
         {"linear:input", "fused_attention:q", "fused_attention:k", "fused_attention:v", "fused_attention:output",
          "lm_head:input", "gelu:input"},
         half);
  expect(gpt, {"layernorm:input", "layernorm:mean", "fused_attention:lse", "lm_head:logprobs"}, fp32);
  const auto materialized = saved_dtypes(testing::materialized(gpt_tiny), amp_bf16);
  expect(materialized, {"attention_scores:q", "attention_scores:k", "attention_context:probs", "attention_context:v"}, half);
  expect(materialized, {"softmax:output"}, fp32);
  const auto llama = saved_dtypes(testing::tiny_config("llama-tiny", 0.1), amp_bf16);
  for (const char* slot : {"rmsnorm:input", "rmsnorm:normalized"}) EXPECT_EQ(llama.at(slot), fp32) << slot;
  for (const char* slot : {"silu:input", "mul:a", "mul:b"}) EXPECT_EQ(llama.at(slot), half) << slot;
  const auto resnet = saved_dtypes(testing::tiny_config("resnet-tiny", 0.1), amp_bf16);
  EXPECT_EQ(resnet.at("conv2d:input"), half);
  EXPECT_EQ(resnet.at("cross_entropy:logprobs"), fp32);
  // Without autocast every activation is in the one type.
  EXPECT_EQ(saved_dtypes(gpt_tiny, {torch::kBFloat16}).at("layernorm:input"), half);
}

// The storages the q, k and v projections save, by layer path.
class SavedStorages : public LayerObserver {
 public:
  void forward_begin(const Layer&, std::vector<torch::Tensor*>&) override {}
  void saved(const Layer& layer, const Slot&, const torch::Tensor& tensor) override {
    storages[layer.path()] = tensor.storage().data();
  }
  void forward_end(const Layer&, torch::Tensor&) override {}
  std::map<std::string, const void*> storages;
};

// Projected apart (HuggingFace's BERT, ViT, Llama, OPT), q, k and v save
// one tensor, the norm's output; under autocast each casts it itself and
// saves its own half-type copy, as HuggingFace's do.
TEST(Autocast, EachOfThreeProjectionsSavesItsOwnCopy) {
  model::NetworkConfig config = testing::tiny_config("llama-tiny");
  std::get<model::TransformerConfig>(config.body).fused_qkv = false;
  const auto distinct = [&](const Precision& precision) {
    const auto planned = testing::planned(config, "keep");
    planned.network->set_precision(precision);
    SavedStorages observer;
    const ObserverGuard guard(&observer);
    testing::step(*planned.network, make_synthetic_data(config, cpu, 0)->next(2));
    std::set<const void*> storages;
    for (const char* name : {"q", "k", "v"}) storages.insert(observer.storages.at("blocks.0.attn." + std::string(name)));
    return storages.size();
  };
  EXPECT_EQ(distinct({}), 1u);
  EXPECT_EQ(distinct(amp_bf16), 3u);
}

class AutocastNetwork : public ::testing::TestWithParam<std::string> {};

// One step of `config` under `plan` (a name or a model::Plan).
template <typename PlanOrName>
testing::Step step_in(const model::NetworkConfig& config, const PlanOrName& plan, const Precision& precision) {
  const auto network = testing::planned(config, plan).network;
  network->set_precision(precision);
  return testing::step(*network, make_synthetic_data(config, cpu, 0)->next(4));
}

// Autocast rounds a subset of what all-bf16 rounds (norms, softmax and the
// loss stay fp32): its gradients are fp32 and no further from fp32's than
// all-bf16's are. bf16 arithmetic differs between CPUs, so the bound is
// what bf16 does on this one.
TEST_P(AutocastNetwork, GradientsAreFp32AndNoFurtherOffThanAllBf16) {
  auto config = testing::tiny_config(GetParam());
  // A mixture's experts forced, balanced: a token routed elsewhere by a
  // rounding would swamp the errors compared.
  if (const auto* t = std::get_if<model::TransformerConfig>(&config.body); t && t->moe) {
    config = model::with_expert_routing(config, 1.0 / t->moe->experts);
  }
  const auto exact = step_in(config, "keep", {});
  const auto amp = step_in(config, "keep", amp_bf16);
  const auto bf16 = step_in(config, "keep", {torch::kBFloat16});
  for (const auto& [name, grad] : amp.grads) EXPECT_EQ(grad.scalar_type(), torch::kFloat) << name;
  const double amp_off = testing::relative_error(amp, exact), bf16_off = testing::relative_error(bf16, exact);
  EXPECT_GT(amp_off, 0) << "nothing ran in bf16";
  EXPECT_LE(amp_off, bf16_off) << "all-bf16: " << bf16_off;
}

// The memory optimizations take autocast's casts as they come: recomputing
// segments redoes them (the same gradients, bit for bit), and 8-bit activations are
// as far from autocast's keep as 8 bits alone are from fp32's, give or take
// what bf16 does (twice the two errors' sum, as in moms_test.cpp).
TEST_P(AutocastNetwork, PlansUnderAutocastGiveItsGradients) {
  const auto config = testing::tiny_config(GetParam());
  const auto keep = step_in(config, "keep", amp_bf16);
  const model::Plan recomputed = testing::recompute_segments(testing::planned(config, "keep").layout);
  EXPECT_TRUE(testing::identical(step_in(config, recomputed, amp_bf16), keep));
  const double amp_alone = testing::relative_error(keep, step_in(config, "keep", {}));
  const double q8_alone = testing::relative_error(step_in(config, "quantize-8", {}), step_in(config, "keep", {}));
  EXPECT_LT(testing::relative_error(step_in(config, "quantize-8", amp_bf16), keep), 2 * (amp_alone + q8_alone))
      << "autocast alone " << amp_alone << ", 8 bits alone " << q8_alone;
}

INSTANTIATE_TEST_SUITE_P(Zoo, AutocastNetwork,
                         ::testing::Values("gpt-tiny", "llama-tiny", "qwen3-tiny", "phi3-tiny", "gemma2-tiny", "gemma3-tiny",
                                           "deepseek-v3-tiny", "bert-hf-tiny", "vit-tiny", "resnet-tiny", "mlp-tiny"),
                         test_support::NetworkParamName());

}  // namespace
}  // namespace papaya::executor
