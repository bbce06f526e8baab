// FP8 training as the executor emulates it: the 1-byte codes, each recipe's
// products against the products of its cast operands computed here in
// float64, what the layers save and hold, and networks trained in it.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "executor/data.h"
#include "executor/layers/dense.h"
#include "executor/precision.h"
#include "executor/storage/fp8_codes.h"
#include "model/catalog/network_config.h"
#include "model/error.h"
#include "model/plan.h"
#include "tests/executor/moms_fixture.h"
#include "tests/support/test_names.h"

namespace papaya::executor {
namespace {

using model::Fp8Format;
using model::Fp8Recipe;

const torch::Device cpu(torch::kCPU);

TEST(ResolvePrecision, Fp8RecipesAreAutocastBf16WithTheirRecipe) {
  for (const auto& [name, recipe] : std::map<std::string, Fp8Recipe>{
           {"fp8-tensorwise", Fp8Recipe::tensorwise}, {"fp8-rowwise", Fp8Recipe::rowwise}, {"fp8-delayed", Fp8Recipe::delayed}}) {
    const Precision p = resolve_precision(name, cpu);
    EXPECT_EQ(p.dtype, torch::kBFloat16) << name;
    EXPECT_TRUE(p.autocast) << name;
    EXPECT_EQ(p.fp8, recipe) << name;
  }
  EXPECT_EQ(resolve_precision("amp-bf16", cpu).fp8, Fp8Recipe::none);
  EXPECT_THROW(resolve_precision("fp8", cpu), InputError);
}

// Every finite value of a format, by code, as the format defines it.
std::map<int, double> format_values(Fp8Format format) {
  const model::Fp8FormatSpec s = model::fp8_format_spec(format);
  std::map<int, double> values;
  for (int code = 0; code < 256; ++code) {
    const int exponent = (code >> s.mantissa_bits) & ((1 << (7 - s.mantissa_bits)) - 1);
    const int mantissa = code & ((1 << s.mantissa_bits) - 1);
    const double magnitude = exponent == 0
                                 ? std::ldexp(mantissa, 1 - s.exponent_bias - s.mantissa_bits)
                                 : std::ldexp((1 << s.mantissa_bits) + mantissa, exponent - s.exponent_bias - s.mantissa_bits);
    if (magnitude <= s.max) values[code] = code & 0x80 ? -magnitude : magnitude;
  }
  return values;
}

TEST(Fp8Codes, EveryCodeReadsAsItsValueAndCastsBackToItself) {
  for (const Fp8Format format : {Fp8Format::e4m3, Fp8Format::e5m2}) {
    const auto values = format_values(format);
    EXPECT_EQ(values.size(), format == Fp8Format::e4m3 ? 254u : 248u);
    std::vector<uint8_t> codes;
    for (const auto& [code, value] : values) codes.push_back(static_cast<uint8_t>(code));
    const torch::Tensor c = torch::tensor(codes, torch::kByte);
    const torch::Tensor decoded = fp8_decode(c, format, torch::kFloat);
    const torch::Tensor again = fp8_encode(decoded, torch::ones({}), format);
    for (size_t i = 0; i < codes.size(); ++i) {
      EXPECT_EQ(decoded[static_cast<int64_t>(i)].item<double>(), values.at(codes[i])) << "code " << int(codes[i]);
      if (codes[i] == 0x80) continue;  // -0 casts to +0
      EXPECT_EQ(again[static_cast<int64_t>(i)].item<int>(), codes[i]) << "code " << int(codes[i]);
    }
    // bf16 holds every value exactly.
    EXPECT_TRUE(fp8_decode(c, format, torch::kBFloat16).to(torch::kFloat).equal(decoded));
  }
}

// A cast is the nearest value (either of two equally near), the largest
// beyond it: checked against every value of the format.
TEST(Fp8Codes, CastsToTheNearestValueAndSaturates) {
  torch::manual_seed(3);
  for (const Fp8Format format : {Fp8Format::e4m3, Fp8Format::e5m2}) {
    const auto values = format_values(format);
    const double max = model::fp8_format_spec(format).max;
    // Magnitudes from far below the smallest subnormal to past the largest value.
    const torch::Tensor x =
        torch::exp2(torch::rand({4000}, torch::kDouble) * (std::log2(max) + 30) - 28) * (torch::rand({4000}) - 0.5).sign();
    const torch::Tensor scale = torch::full({}, 0.5);
    const torch::Tensor cast = fp8_decode(fp8_encode(x.to(torch::kFloat), scale, format), format, torch::kDouble);
    for (int64_t i = 0; i < x.size(0); ++i) {
      const double target = static_cast<double>(x[i].item<float>()) * 0.5;
      double nearest = std::numeric_limits<double>::infinity();
      for (const auto& [code, v] : values) nearest = std::min(nearest, std::abs(v - target));
      const double got = cast[i].item<double>();
      if (std::abs(target) >= max) {
        EXPECT_EQ(got, std::copysign(max, target)) << target;
      } else {
        EXPECT_EQ(std::abs(got - target), nearest) << target << " cast to " << got;
      }
    }
  }
}

// --- One linear layer: its products against those of its cast operands ---

struct Reference {
  torch::Tensor y, dx, dw;  // float64
};

// a's values cast with `scale` (broadcast against a) and read back, float64.
torch::Tensor cast_values(const torch::Tensor& a, const torch::Tensor& scale, Fp8Format format) {
  return fp8_decode(fp8_encode(a, scale, format), format, torch::kDouble);
}

torch::Tensor whole_scale(const torch::Tensor& a, Fp8Format format) {
  return model::fp8_format_spec(format).max / a.abs().max().to(torch::kFloat);
}

// A scale a row (dim 1) or a column (dim 0), a power of two.
torch::Tensor pow2_scale(const torch::Tensor& a, int64_t dim, Fp8Format format) {
  return torch::exp2(torch::floor(torch::log2(model::fp8_format_spec(format).max / a.abs().amax(dim, true).to(torch::kFloat))));
}

// a·b^T of a (m x k) and b (n x k), each cast with its scale, unscaled, float64.
torch::Tensor product(const torch::Tensor& a, const torch::Tensor& sa, Fp8Format fa, const torch::Tensor& b,
                      const torch::Tensor& sb, Fp8Format fb) {
  return cast_values(a, sa, fa).mm(cast_values(b, sb, fb).t()) / sa.to(torch::kDouble) / sb.to(torch::kDouble).t();
}

// torchao's recipes as their documentation defines them: tensorwise one
// scale a tensor, E4M3 forward and E5M2 for the output's gradient; rowwise
// E4M3 throughout, power-of-two scales along the dimension each product sums.
Reference torchao(Fp8Recipe recipe, const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b,
                  const torch::Tensor& g) {
  const auto e4 = Fp8Format::e4m3, e5 = Fp8Format::e5m2;
  Reference r;
  if (recipe == Fp8Recipe::tensorwise) {
    r.y = product(x, whole_scale(x, e4), e4, w, whole_scale(w, e4), e4);
    r.dx = product(g, whole_scale(g, e5), e5, w.t(), whole_scale(w, e4), e4);
    r.dw = product(g.t(), whole_scale(g, e5), e5, x.t(), whole_scale(x, e4), e4);
  } else {
    r.y = product(x, pow2_scale(x, 1, e4), e4, w, pow2_scale(w, 1, e4), e4);
    r.dx = product(g, pow2_scale(g, 1, e4), e4, w.t(), pow2_scale(w, 0, e4).t(), e4);
    r.dw = product(g.t(), pow2_scale(g, 0, e4).t(), e4, x.t(), pow2_scale(x, 0, e4).t(), e4);
  }
  r.y = r.y + b.to(torch::kBFloat16).to(torch::kDouble);
  return r;
}

struct LayerRun {
  torch::Tensor y, dx, dw;
};

LayerRun run(Linear& layer, const torch::Tensor& x, const torch::Tensor& g) {
  const torch::Tensor input = x.to(torch::kBFloat16).requires_grad_();
  layer.weight.mutable_grad() = torch::Tensor();
  const torch::Tensor y = layer.forward(input);
  y.backward(g.to(torch::kBFloat16));
  return {y.detach().to(torch::kDouble), input.grad().to(torch::kDouble), layer.weight.grad().to(torch::kDouble)};
}

// The emulation multiplies the codes in bf16, unscales in place and adds the
// bias: four roundings to bf16 (2^-9 of a value each) of the largest value
// at most, where one FP8 step is 2^-4 of a value.
void expect_near(const torch::Tensor& got, const torch::Tensor& reference, const std::string& what) {
  const double off = (got - reference).abs().max().item<double>();
  const double bound = 4 * std::ldexp(1.0, -9) * reference.abs().max().item<double>();
  EXPECT_LE(off, bound) << what;
}

Linear fp8_layer(Fp8Recipe recipe) {
  torch::manual_seed(5);
  Linear layer(32, 48);
  layer.set_compute_dtype(torch::kBFloat16, true);
  EXPECT_TRUE(layer.set_fp8(recipe));
  return layer;
}

TEST(Fp8Linear, TorchaosRecipesMultiplyTheirCastOperands) {
  for (const Fp8Recipe recipe : {Fp8Recipe::tensorwise, Fp8Recipe::rowwise}) {
    Linear layer = fp8_layer(recipe);
    const torch::Tensor x = torch::randn({6, 32}).to(torch::kBFloat16).to(torch::kFloat);
    const torch::Tensor g = (torch::randn({6, 48}) * 1e-3).to(torch::kBFloat16).to(torch::kFloat);
    const LayerRun got = run(layer, x, g);
    const Reference want = torchao(recipe, x, layer.weight.detach(), layer.bias.detach(), g);
    const std::string name = recipe == Fp8Recipe::tensorwise ? "tensorwise" : "rowwise";
    expect_near(got.y, want.y, name + " output");
    expect_near(got.dx, want.dx, name + " input's gradient");
    expect_near(got.dw, want.dw, name + " weight's gradient");
  }
}

// Transformer Engine's delayed scaling: the first step at scale 1, the
// next at the scales of the first step's amaxes (E4M3 forward, E5M2 for
// the output's gradient); the weight's gradient from the input's codes.
TEST(Fp8Linear, DelayedScalingTakesItsScalesFromThePreviousSteps) {
  Linear layer = fp8_layer(Fp8Recipe::delayed);
  const auto e4 = Fp8Format::e4m3, e5 = Fp8Format::e5m2;
  const torch::Tensor w = layer.weight.detach(), b = layer.bias.detach();
  torch::Tensor sx = torch::ones({}), sw = torch::ones({}), sg = torch::ones({});
  for (int step = 0; step < 2; ++step) {
    const torch::Tensor x = (torch::randn({6, 32}) * 3).to(torch::kBFloat16).to(torch::kFloat);
    const torch::Tensor g = (torch::randn({6, 48}) * 1e-2).to(torch::kBFloat16).to(torch::kFloat);
    const LayerRun got = run(layer, x, g);
    const std::string at = "step " + std::to_string(step);
    expect_near(got.y, product(x, sx, e4, w, sw, e4) + b.to(torch::kBFloat16).to(torch::kDouble), at + " output");
    expect_near(got.dx, product(g, sg, e5, w.t(), sw, e4), at + " input's gradient");
    expect_near(got.dw, product(g.t(), sg, e5, x.t(), sx, e4), at + " weight's gradient");
    sx = whole_scale(x, e4), sw = whole_scale(w, e4), sg = whole_scale(g, e5);
  }
}

// --- Networks ---

// The dtypes and slot kinds the linears the recipe converts save, and the
// dtypes the others (none: the emulation converts every linear) save.
class SavedByLinears : public LayerObserver {
 public:
  void forward_begin(const Layer&, std::vector<torch::Tensor*>&) override {}
  void saved(const Layer& layer, const Slot& slot, const torch::Tensor& tensor) override {
    const auto* linear = dynamic_cast<const Linear*>(&layer);
    if (linear == nullptr) return;
    if (linear->fp8().recipe == Fp8Recipe::none) return (void)others.insert(tensor.scalar_type());
    dtypes.insert(tensor.scalar_type()), kinds.insert(slot.kind);
  }
  void forward_end(const Layer&, torch::Tensor&) override {}
  std::set<torch::ScalarType> dtypes, others;
  std::set<model::SlotKind> kinds;
};

// One step of `config` under `plan` (a name or a model::Plan), a mixture's
// experts forced, balanced: a token routed elsewhere by a rounding would
// swamp the errors compared.
template <typename PlanOrName>
testing::Step step_in(model::NetworkConfig config, const PlanOrName& plan, const std::string& precision,
                      SavedByLinears* observer = nullptr) {
  if (const auto* t = std::get_if<model::TransformerConfig>(&config.body); t && t->moe) {
    config = model::with_expert_routing(config, 1.0 / t->moe->experts);
  }
  const auto network = testing::planned(config, plan).network;
  network->set_precision(resolve_precision(precision, cpu));
  const ObserverGuard guard(observer);
  return testing::step(*network, make_synthetic_data(config, cpu, 0)->next(4));
}

class Fp8Network : public ::testing::TestWithParam<std::string> {};

// torchao's recipes save the linears' bf16 inputs, Transformer Engine's
// their E4M3 codes, which plans keep as they are.
TEST_P(Fp8Network, LinearsSaveWhatTheRecipeSaves) {
  const auto config = testing::tiny_config(GetParam());
  const std::string keep = "keep";
  for (const std::string precision : {"fp8-tensorwise", "fp8-rowwise", "fp8-delayed"}) {
    SavedByLinears observer;
    step_in(config, keep, precision, &observer);
    const bool delayed = precision == "fp8-delayed";
    EXPECT_EQ(observer.dtypes, std::set<torch::ScalarType>{delayed ? torch::kByte : torch::kBFloat16}) << precision;
    EXPECT_EQ(observer.kinds, std::set<model::SlotKind>{delayed ? model::SlotKind::index : model::SlotKind::activation})
        << precision;
    for (const torch::ScalarType other : observer.others) EXPECT_EQ(other, torch::kBFloat16) << precision;
  }
}

// Recomputing every segment casts as the forward cast (the delayed recipe
// with the forward's scales): the same gradients, bit for bit.
TEST_P(Fp8Network, RecomputedSegmentsGiveKeepsGradients) {
  const auto config = testing::tiny_config(GetParam());
  const auto planned = testing::planned(config, "keep");
  const model::Plan recomputed = testing::recompute_segments(planned.layout);
  for (const std::string precision : {"fp8-tensorwise", "fp8-rowwise", "fp8-delayed"}) {
    EXPECT_TRUE(testing::identical(step_in(config, recomputed, precision), step_in(config, "keep", precision))) << precision;
  }
}

// FP8 rounds the products' operands that autocast rounds to bf16, with a
// unit roundoff up to 2^-3 (E5M2) against bf16's 2^-8: its gradients are
// further from fp32's than autocast's, by at most twice that ratio.
TEST_P(Fp8Network, GradientsAreFurtherOffThanAutocastsWithinTheirRoundoff) {
  const auto config = testing::tiny_config(GetParam());
  const std::string keep = "keep";
  const auto exact = step_in(config, keep, "fp32");
  const double amp_off = testing::relative_error(step_in(config, keep, "amp-bf16"), exact);
  for (const std::string precision : {"fp8-tensorwise", "fp8-rowwise", "fp8-delayed"}) {
    const double off = testing::relative_error(step_in(config, keep, precision), exact);
    EXPECT_GT(off, amp_off) << precision << ": nothing ran in FP8";
    EXPECT_LE(off, 2 * std::ldexp(1.0, 8 - 3) * amp_off) << precision << ", autocast " << amp_off;
  }
}

// The delayed recipe's state counts in the static bytes as the model counts it.
TEST_P(Fp8Network, DelayedStateIsWhatTheModelCounts) {
  const auto config = testing::tiny_config(GetParam());
  const auto network = testing::planned(config, "keep").network;
  network->set_precision(resolve_precision("fp8-delayed", cpu));
  int64_t expected = 0, converted = 0;
  for (const Layer* layer : network->layers()) {
    const auto* linear = dynamic_cast<const Linear*>(layer);
    if (linear == nullptr || linear->stored_weight()) continue;
    const int64_t in = linear->weight.size(1), out = linear->weight.size(0);
    expected += model::fp8_state_bytes(Fp8Recipe::delayed, in, out);
    ++converted;
  }
  EXPECT_GT(converted, 0);
  EXPECT_EQ(network->fp8_state_bytes(), expected);
}

INSTANTIATE_TEST_SUITE_P(Zoo, Fp8Network, ::testing::Values("gpt-tiny", "llama-tiny", "mixtral-tiny"),
                         test_support::NetworkParamName());

}  // namespace
}  // namespace papaya::executor
