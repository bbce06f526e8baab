// Memory optimizations on the layers of the zoo: gradients against the exact
// (keep) path, stored sizes against the model, sharing against the allocator.
#include <gtest/gtest.h>

#include <set>

#include "executor/data.h"
#include "executor/layers/clamped_swiglu.h"
#include "executor/layers/dense.h"
#include "executor/layers/elementwise.h"
#include "executor/layers/loss.h"
#include "executor/memory.h"
#include "executor/storage/cpu_isa.h"
#include "executor/storage/invert.h"
#include "executor/storage/stored_bytes.h"
#include "model/catalog/parameter_count.h"
#include "model/plan.h"
#include "model/strategy.h"
#include "tests/executor/moms_fixture.h"

namespace papaya::executor {
namespace {

using testing::planned;
using testing::tiny_config;

Batch batch_for(const model::NetworkConfig& config, int64_t size = 4) {
  return make_synthetic_data(config, torch::kCPU, 1)->next(size);
}

class EveryNetwork : public ::testing::TestWithParam<std::string> {};

// 8 bits round 17 times finer than 4 (255 levels against 15), so the
// gradients' error under quantize-8 is a small share of quantize-4's, which
// says how sensitive this network's gradients are to rounding what it saves
// (the zoo: 14 to 28 times smaller; OLMoE's q and k norms put quantize-8 at
// 1.0 %, the others at 0.3 to 0.8 %).
TEST_P(EveryNetwork, Quantize8GradientsAreAFractionOfQuantize4s) {
  const auto config = tiny_config(GetParam());
  const Batch batch = batch_for(config);
  const auto exact = testing::step(*planned(config, "keep").network, batch);
  const auto q8 = testing::step(*planned(config, "quantize-8").network, batch);
  const auto q4 = testing::step(*planned(config, "quantize-4").network, batch);
  const double q4_error = testing::relative_error(q4, exact);
  EXPECT_GT(q4_error, 0);
  EXPECT_LT(testing::relative_error(q8, exact), q4_error / 8);
  EXPECT_NEAR(q8.loss, exact.loss, 1e-2 * std::abs(exact.loss));
}

// In bf16 the MOM layers take the fp32 parameters, cast them where they
// compute and return fp32 gradients, as keep's casts do. How close they are
// is measured against two errors computed here: what bf16 alone does to
// keep's gradients and what 8 bits alone do in fp32. bf16 arithmetic differs
// between CPUs (native bf16 or not, AVX-512 or AVX2), so no constant would
// hold on every one; twice the two errors' sum does.
TEST_P(EveryNetwork, Bf16Quantize8GradientsAreFp32AndClose) {
  const auto config = tiny_config(GetParam());
  const Batch batch = batch_for(config);
  const auto step_in = [&](const std::string& plan, torch::ScalarType dtype) {
    const auto network = planned(config, plan).network;
    network->set_precision({dtype});
    return testing::step(*network, batch);
  };
  const auto keep32 = step_in("keep", torch::kFloat), q8_32 = step_in("quantize-8", torch::kFloat);
  const auto keep16 = step_in("keep", torch::kBFloat16), q8_16 = step_in("quantize-8", torch::kBFloat16);
  for (const auto& [name, grad] : q8_16.grads) EXPECT_EQ(grad.scalar_type(), torch::kFloat) << name;
  const double bf16_alone = testing::relative_error(keep16, keep32);
  const double q8_alone = testing::relative_error(q8_32, keep32);
  EXPECT_LT(testing::relative_error(q8_16, keep16), 2 * (bf16_alone + q8_alone))
      << "bf16 alone " << bf16_alone << ", 8 bits alone " << q8_alone;
}

// Dropout masks and ReLU outputs kept as 1 bit give the same gradients.
TEST_P(EveryNetwork, OneBitMasksAreExact) {
  const auto config = tiny_config(GetParam(), 0.1);
  const Batch batch = batch_for(config);
  const auto keep = planned(config, "keep");
  model::Plan masks;
  masks.name = "masks";
  for (const auto& layer : keep.layout.layers) {
    for (const auto& slot : layer.slots) {
      if (slot.kind == model::SlotKind::mask)
        masks.tensors[model::tensor_key(layer.path, slot.name)] = model::parse_tensor_strategy("quantize-1", "t");
    }
  }
  ASSERT_FALSE(masks.tensors.empty());
  EXPECT_TRUE(testing::identical(testing::step(*planned(config, masks).network, batch), testing::step(*keep.network, batch)));
}

// What one step stores, by strategy, is what the model's device_bytes says
// of each saved tensor (shapes from a native run), storage shared by slots
// with the same strategy counted once.
TEST_P(EveryNetwork, StoredBytesAreTheModelsDeviceBytes) {
  const auto config = tiny_config(GetParam(), 0.1);
  const Batch batch = batch_for(config);
  struct Shapes : LayerObserver {
    void forward_begin(const Layer&, std::vector<torch::Tensor*>&) override {}
    void saved(const Layer& layer, const Slot& slot, const torch::Tensor& t) override {
      tensors[model::tensor_key(layer.path(), slot.name)] = t;
    }
    void forward_end(const Layer&, torch::Tensor&) override {}
    std::map<std::string, torch::Tensor> tensors;
  } shapes;
  {
    auto keep = planned(config, "keep");
    const ObserverGuard guard(&shapes);
    torch::manual_seed(7);  // the dropout masks of the runs below: an expert's tokens depend on them
    keep.network->loss(batch);
  }
  for (const std::string name : {"quantize-8", "quantize-4", "quantize-2", "quantize-2+invert"}) {
    auto p = planned(config, name);
    const model::Plan plan = model::load_plan(name, p.layout, config.name);
    std::map<std::string, int64_t> expected;
    std::set<std::pair<const void*, std::string>> counted;
    for (const auto& layer : p.layout.layers) {
      for (const auto& slot : layer.slots) {
        const model::TensorStrategy s = plan.tensor(layer.path, slot.name);
        const torch::Tensor& t = shapes.tensors.at(model::tensor_key(layer.path, slot.name));
        if (s.form == model::Form::recomputed) continue;
        // An inverted activation keeps a 1-bit mask of its input's size.
        if (!counted.insert({t.storage().unsafeGetStorageImpl(), s.name()}).second) continue;
        expected[s.name()] += s.is_keep() ? static_cast<int64_t>(t.storage().nbytes())
                                          : model::device_bytes(slot.kind, t.numel(), t.element_size(), s);
      }
    }
    StoredBytesRecorder recorder;
    {
      const StoredBytesGuard guard(&recorder);
      torch::manual_seed(7);
      p.network->loss(batch);
    }
    EXPECT_EQ(recorder.bytes(), expected) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, EveryNetwork,
                         ::testing::Values("gpt-tiny", "llama-tiny", "llama-tiny-lora", "mixtral-tiny", "qwen-moe-tiny",
                                           "olmoe-tiny", "qwen3-tiny", "phi3-tiny", "gemma2-tiny", "gemma3-tiny", "gpt-oss-tiny",
                                           "deepseek-v3-tiny", "deepseek-v3-mtp-tiny", "bert-tiny", "bert-hf-tiny", "vit-tiny",
                                           "resnet-tiny", "mlp-tiny"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(Invert, DerivativeFromOutputIsAccurate) {
  const torch::Tensor x = torch::linspace(-12, 30, 400001);
  for (const model::LayerKind kind : {model::LayerKind::gelu, model::LayerKind::silu}) {
    const torch::Tensor y = kind == model::LayerKind::gelu ? torch::gelu(x) : torch::silu(x);
    const torch::Tensor exact = kind == model::LayerKind::gelu
                                    ? torch::gelu_backward(torch::ones_like(x).to(torch::kDouble), x.to(torch::kDouble))
                                    : torch::silu_backward(torch::ones_like(x).to(torch::kDouble), x.to(torch::kDouble));
    const torch::Tensor approx = input_grad_from_output(kind, torch::ones_like(x), y, x >= branch_point(kind));
    EXPECT_LT((approx.to(torch::kDouble) - exact).abs().max().item<double>(), 2e-4) << model::to_string(kind);
  }
}

// Every instruction-set level (cpu_isa.h) gives the baseline's gradient to
// the bit, fp32 and bf16, with a length no level's lanes divide.
TEST(Invert, EveryInstructionSetLevelGivesTheSameGradient) {
  const cpu_isa::Level cpu = cpu_isa::level();
  if (cpu == cpu_isa::Level::baseline) GTEST_SKIP() << "this CPU runs the baseline loop only";
  torch::manual_seed(4);
  const torch::Tensor x = torch::randn({10007}) * 4;
  for (const model::LayerKind kind : {model::LayerKind::gelu, model::LayerKind::silu}) {
    for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
      const torch::Tensor y = (kind == model::LayerKind::gelu ? torch::gelu(x) : torch::silu(x)).to(dtype);
      const torch::Tensor right = x >= branch_point(kind), grad = torch::randn_like(x).to(dtype);
      cpu_isa::limit(cpu_isa::Level::baseline);
      const torch::Tensor baseline = input_grad_from_output(kind, grad, y, right);
      cpu_isa::limit(cpu);
      EXPECT_TRUE(torch::equal(input_grad_from_output(kind, grad, y, right), baseline))
          << model::to_string(kind) << " " << dtype << " at " << cpu_isa::to_string(cpu);
    }
  }
}

// A ReLU's gradient from its mask is the native ReLU backward's, to the bit.
TEST(Invert, ReluGradientFromTheMaskIsTheNativeOne) {
  torch::manual_seed(5);
  const torch::Tensor x = torch::randn({3, 10007});
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    const torch::Tensor grad = torch::randn_like(x).to(dtype), y = torch::relu(x).to(dtype);
    EXPECT_TRUE(torch::equal(input_grad_from_mask(grad, x > 0), torch::threshold_backward(grad, y, 0))) << dtype;
  }
}

// The inverted backward is what the performance model prices: the input's
// gradient and nothing else (the branch mask's unpacked bytes are the
// caller's).
TEST(Invert, BackwardOnTheCpuAllocatesOnlyTheGradient) {
  const torch::Tensor x = torch::randn({64, 1000});
  const torch::Tensor y = torch::gelu(x), right = x >= branch_point(model::LayerKind::gelu), grad = torch::randn_like(x);
  MemoryTracker memory(torch::kCPU);
  const int64_t before = memory.current();
  const torch::Tensor dx = input_grad_from_output(model::LayerKind::gelu, grad, y, right);
  EXPECT_EQ(memory.peak() - before, dx.numel() * 4);
}

TEST(Invert, GradientsAreCloseToExactGeluAndSilu) {
  auto silu = model::parse_network_config(
      nlohmann::json::parse(R"({"name": "silu-tiny", "family": "gpt", "layers": 2, "d_model": 64, "heads": 4,
                                "seq_len": 32, "vocab": 128, "activation": "swiglu", "norm": "rmsnorm"})"),
      "silu-tiny.json");
  for (const auto& config : {tiny_config("gpt-tiny"), tiny_config("vit-tiny"), silu}) {
    const Batch batch = batch_for(config);
    const auto exact = testing::step(*planned(config, "keep").network, batch);
    const auto inverted = testing::step(*planned(config, "invert").network, batch);
    EXPECT_LT(testing::relative_error(inverted, exact), 1e-4) << config.name;
  }
}

TEST(LMHead, RecomputedLogProbabilitiesGiveKeepsGradients) {
  // Enough rows that backward recomputes several chunks (640 rows of 256).
  const auto config = model::parse_network_config(
      nlohmann::json::parse(R"({"name": "wide-vocab", "family": "gpt", "layers": 1, "d_model": 32, "heads": 2,
                                "seq_len": 16, "vocab": 8192})"),
      "wide-vocab.json");
  ASSERT_EQ(model::lm_head_chunk_rows(8192), 256);
  const Batch batch = batch_for(config, 40);
  const auto keep = planned(config, "keep");
  model::Plan recompute;
  recompute.name = "recompute-logprobs";
  recompute.tensors["lm_head:logprobs"] = model::parse_tensor_strategy("recompute", "t");
  const auto exact = testing::step(*keep.network, batch);
  const auto chunked = testing::step(*planned(config, recompute).network, batch);
  EXPECT_NEAR(chunked.loss, exact.loss, 1e-5 * exact.loss);
  EXPECT_LT(testing::relative_error(chunked, exact), 1e-5);
  // In bf16 the head casts the fp32 weight again in backward and returns an
  // fp32 gradient; it accumulates the chunks in fp32 where keep's one product
  // rounds to bf16.
  const auto bf16 = [&](std::shared_ptr<Network> network) {
    network->set_precision({torch::kBFloat16});
    return testing::step(*network, batch);
  };
  const auto exact_bf16 = bf16(keep.network);
  const auto chunked_bf16 = bf16(planned(config, recompute).network);
  for (const auto& [name, grad] : chunked_bf16.grads) EXPECT_EQ(grad.scalar_type(), torch::kFloat) << name;
  // Against fp32, no further off than keep's bf16 path is (bf16 arithmetic
  // differs between CPUs: the bound is what bf16 does on this one).
  const double keep_off = testing::relative_error(exact_bf16, exact);
  EXPECT_LT(testing::relative_error(chunked_bf16, exact), 1.5 * keep_off) << "keep's bf16 path: " << keep_off;
  EXPECT_LE(std::abs(chunked_bf16.loss - exact.loss), 1.5 * std::abs(exact_bf16.loss - exact.loss) + 1e-6 * exact.loss);
}

// Multi-token prediction modules' heads leave their last positions out of
// their loss: recomputed chunk by chunk (700 rows of 256, two modules and
// the main head), they give keep's loss and gradients, which nll_loss's
// ignore_index makes.
TEST(LMHead, RecomputedHeadsThatLeaveRowsOutGiveKeepsGradients) {
  const auto config = model::parse_network_config(
      nlohmann::json::parse(R"({"name": "wide-vocab-mtp", "family": "gpt", "layers": 1, "d_model": 32, "heads": 2,
                                "seq_len": 14, "vocab": 8192, "multi_token_prediction": {"depth": 2, "loss_scale": 0.5}})"),
      "wide-vocab-mtp.json");
  const Batch batch = batch_for(config, 50);
  model::Plan recompute;
  recompute.name = "recompute-logprobs";
  for (const char* head : {"lm_head", "mtp.0.head", "mtp.1.head"}) {
    recompute.tensors[std::string(head) + ":logprobs"] = model::parse_tensor_strategy("recompute", "t");
  }
  const auto exact = testing::step(*planned(config, "keep").network, batch);
  const auto chunked = testing::step(*planned(config, recompute).network, batch);
  EXPECT_NEAR(chunked.loss, exact.loss, 1e-5 * exact.loss);
  EXPECT_LT(testing::relative_error(chunked, exact), 1e-5);
}

// Soft-capped logits (cap·tanh(z / cap), Gemma 2's final logits): the loss
// and the input's and weight's gradients against a float64 reference, kept
// and recomputed chunk by chunk (640 rows, chunks of 256), as exact as the
// uncapped head is against its own; logits of about ±3 under a cap of 1,
// so that the tanh bends.
TEST(LMHead, SoftCappedLogitsGiveTheReferencesGradients) {
  constexpr int64_t vocab = 8192, dim = 16;
  ASSERT_EQ(model::lm_head_chunk_rows(vocab), 256);
  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({2, 320, dim}), weight = torch::randn({vocab, dim}) * 0.75;
  const torch::Tensor target = torch::randint(vocab, {2, 320});
  struct Out {
    torch::Tensor loss, x, weight;  // the loss, and the gradients
  };
  const auto head = [&](double cap, bool recomputed) {
    LMHead layer(vocab, dim);
    layer.softcap = cap;
    {
      const torch::NoGradGuard no_grad;
      layer.weight.copy_(weight);
    }
    if (recomputed) layer.set_store_spec(1, StoreSpec{model::parse_tensor_strategy("recompute", "t")});
    const torch::Tensor input = x.clone().requires_grad_();
    const torch::Tensor loss = layer.forward(input, target);
    loss.backward();
    return Out{loss, input.grad(), layer.weight.grad()};
  };
  const auto reference = [&](double cap) {
    const torch::Tensor input = x.to(torch::kDouble).requires_grad_(), w = weight.to(torch::kDouble).requires_grad_();
    torch::Tensor logits = torch::linear(input, w);
    if (cap > 0) logits = torch::tanh(logits / cap) * cap;
    const torch::Tensor loss = torch::nll_loss(torch::log_softmax(logits, -1).flatten(0, 1), target.flatten());
    loss.backward();
    return Out{loss, input.grad(), w.grad()};
  };
  const auto errors = [](const Out& got, const Out& exact) {
    std::vector<double> e;
    for (const auto& [a, b] : {std::pair{got.loss, exact.loss}, {got.x, exact.x}, {got.weight, exact.weight}}) {
      e.push_back((a.to(torch::kDouble) - b).abs().max().item<double>());
    }
    return e;
  };
  const std::vector<double> uncapped = errors(head(0, false), reference(0));
  const Out exact = reference(1.0), plain = reference(0);
  for (const bool recomputed : {false, true}) {
    const std::vector<double> capped = errors(head(1.0, recomputed), exact);
    const std::vector<double> scale = {exact.loss.abs().item<double>(), exact.x.abs().max().item<double>(),
                                       exact.weight.abs().max().item<double>()};
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_LE(capped[i], 4 * std::max(uncapped[i], std::ldexp(scale[i], -23))) << (recomputed ? "recomputed " : "kept ") << i;
    }
  }
  EXPECT_GT((exact.x - plain.x).abs().max().item<double>(), 1e-2 * exact.x.abs().max().item<double>());  // the cap bends
}

// Attention sinks (GPT-OSS's) in a network: a parameter of `heads` logits a
// block, counted as the model counts it; each block's get a gradient; a
// recomputed block gives keep's gradients to the bit, and quantize-8's are a
// fraction of quantize-4's error, as for the zoo.
TEST(AttentionSinks, AreParametersEveryPlanTrains) {
  nlohmann::json doc = tiny_config("llama-tiny").document;
  doc["name"] = "llama-tiny-sinks";
  doc["attention_sinks"] = true;
  const auto config = model::parse_network_config(doc, "llama-tiny-sinks.json");
  const auto& t = config.transformer();
  EXPECT_EQ(model::parameter_count(config), model::parameter_count(tiny_config("llama-tiny")) + t.layers * t.heads);
  const Batch batch = batch_for(config);
  const auto keep = planned(config, "keep");
  EXPECT_EQ(keep.network->parameter_count(), model::parameter_count(config));
  const auto exact = testing::step(*keep.network, batch);
  for (int i = 0; i < t.layers; ++i) {
    const std::string name = "blocks." + std::to_string(i) + ".attn.fused.sinks";
    ASSERT_EQ(exact.grads.count(name), 1u) << name;
    EXPECT_GT(exact.grads.at(name).abs().max().item<double>(), 0) << name;
  }
  const model::Plan recomputed = testing::recompute_segments(keep.layout);
  EXPECT_TRUE(testing::identical(testing::step(*planned(config, recomputed).network, batch), exact));
  const double q4 = testing::relative_error(testing::step(*planned(config, "quantize-4").network, batch), exact);
  EXPECT_GT(q4, 0);
  EXPECT_LT(testing::relative_error(testing::step(*planned(config, "quantize-8").network, batch), exact), q4 / 8);
}

// GPT-OSS's clamped SwiGLU: its output and both inputs' gradients against
// a float64 reference of HuggingFace's expression, (clamp(up, ±limit) +
// 1)·c·sigmoid(alpha·c), c = min(gate, limit), with inputs on both sides of
// the clamps (limit 1.5 over values of about ±3), within a few roundings of
// the largest value; its two inputs stored in 8 bits where 8 bits hold them
// exactly, keep's bits.
TEST(ClampedSwiGlu, EqualsHuggingFacesExpressionAndItsGradients) {
  const double alpha = 1.702;
  struct Out {
    torch::Tensor y, gate, up;
  };
  const auto run = [&](const torch::Tensor& gate, const torch::Tensor& up, const torch::Tensor& g, double limit,
                       const std::optional<StoreSpec>& spec) {
    ClampedSwiGlu layer(alpha, limit);
    if (spec) {
      layer.set_store_spec(0, *spec);
      layer.set_store_spec(1, *spec);
    }
    const torch::Tensor a = gate.clone().requires_grad_(), b = up.clone().requires_grad_();
    const torch::Tensor y = layer.forward(a, b);
    y.backward(g);
    return Out{y, a.grad(), b.grad()};
  };
  torch::manual_seed(0);
  const torch::Tensor gate = torch::randn({64, 40}) * 3, up = torch::randn({64, 40}) * 3, g = torch::randn({64, 40});
  const double limit = 1.5;
  ASSERT_TRUE((gate > limit).any().item<bool>() && (up.abs() > limit).any().item<bool>());
  const torch::Tensor a = gate.to(torch::kDouble).requires_grad_(), b = up.to(torch::kDouble).requires_grad_();
  const torch::Tensor c = a.clamp_max(limit);
  const torch::Tensor y = (b.clamp(-limit, limit) + 1) * c * torch::sigmoid(c * alpha);
  y.backward(g.to(torch::kDouble));
  const Out got = run(gate, up, g, limit, std::nullopt);
  for (const auto& [name, value, exact] :
       {std::tuple{"output", got.y, y.detach()}, std::tuple{"gate's gradient", got.gate, a.grad()},
        std::tuple{"up's gradient", got.up, b.grad()}}) {
    EXPECT_LE((value.to(torch::kDouble) - exact).abs().max().item<double>(),
              16 * std::ldexp(1.0, -23) * exact.abs().max().item<double>())
        << name;
  }
  const torch::Tensor on_grid_gate = testing::on_8bit_grid({64, 40}), on_grid_up = testing::on_8bit_grid({64, 40});
  const Out keep = run(on_grid_gate, on_grid_up, g, 0.5, std::nullopt),
            stored = run(on_grid_gate, on_grid_up, g, 0.5, testing::eight_bits());
  EXPECT_TRUE(torch::equal(stored.y, keep.y));
  EXPECT_TRUE(torch::equal(stored.gate, keep.gate));
  EXPECT_TRUE(torch::equal(stored.up, keep.up));
}

// An inverted GELU stores its output as its consumer stores it: one copy
// for both, as the allocator sees.
TEST(Dedupe, TwoConsumersOfOneTensorStoreOneCopy) {
  torch::manual_seed(0);
  Activation gelu("gelu");
  Linear fc(256, 8);
  StoreSpec q4{model::parse_tensor_strategy("quantize-4", "t")};
  fc.set_store_spec(0, q4);
  gelu.set_store_spec(0, StoreSpec{model::parse_tensor_strategy("invert", "t")});
  const torch::Tensor x = torch::randn({64, 256}, torch::requires_grad());
  branch_point(model::LayerKind::gelu);  // builds the inverse's table now, not while memory is measured
  const int64_t mask = model::device_bytes(model::SlotKind::activation, x.numel(), 4, gelu.store_spec(0).strategy);
  const int64_t copy = model::device_bytes(model::SlotKind::activation, x.numel(), 4, q4.strategy);
  const int64_t output = 64 * 8 * 4;
  const auto held_after_forward = [&](const StoreSpec& gelu_output) {
    gelu.output_spec = gelu_output;
    MemoryTracker memory(torch::kCPU);
    const int64_t before = memory.current();
    const torch::Tensor y = fc.forward(gelu.forward(x));
    return memory.current() - before - output;
  };
  EXPECT_EQ(held_after_forward(q4), mask + copy);
  // Stored with another strategy, the output is a second copy.
  EXPECT_EQ(held_after_forward(StoreSpec{model::parse_tensor_strategy("quantize-8", "t")}),
            mask + copy +
                model::device_bytes(model::SlotKind::activation, x.numel(), 4, model::parse_tensor_strategy("quantize-8", "t")));
}

}  // namespace
}  // namespace papaya::executor
