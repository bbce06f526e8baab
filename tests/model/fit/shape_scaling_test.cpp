// The shape axis (model/fit/shape_scaling.h): a transformer profiled at 1/4,
// 2/4 and 3/4 of its shape (tokens, widths, vocabulary) and modelled whole,
// against the network profiled whole. Every tensor a step holds is a
// polynomial of degree 2 in the fraction, so the layers' descriptions and the
// bytes held at every layer's start must come out as the whole network's, to
// the byte; FLOPs, a cubic, to the FLOP but for a bias; the peaks within a
// kernel's scratch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>

#include "model/catalog/hardware.h"
#include "model/catalog/network_config.h"
#include "model/catalog/shape_fraction.h"
#include "model/error.h"
#include "model/fit/shape_scaling.h"
#include "tests/support/quick_fit.h"
#include "tests/support/test_names.h"

namespace papaya::profiler {
namespace {

constexpr int batch = 16;
constexpr int parts = 4;

model::LayerModel from_fractions(const model::NetworkConfig& whole, model::ShapeCut cut) {
  std::vector<model::ModelAtFraction> fractions;
  for (int k = 1; k <= 3; ++k) fractions.push_back({k, quick_fit(model::at_shape_fraction(whole, k, parts, cut))});
  return model::at_full_shape(fractions, parts, cut, "test");
}

struct Cut {
  std::string network;
  model::ShapeCut cut;
};

void PrintTo(const Cut& c, std::ostream* out) {
  *out << c.network << (c.cut == model::ShapeCut::widths ? " (widths)" : " (tokens and widths)");
}

class ShapeScaling : public ::testing::TestWithParam<Cut> {};

TEST_P(ShapeScaling, ThreeFractionsGiveTheWholeNetworksBytes) {
  model::NetworkConfig whole = model::load_network_config(GetParam().network);
  // Experts' tokens as the modelling commands route them: balanced.
  if (whole.mixture()) whole = model::with_expert_routing(whole, 1.0 / whole.mixture()->experts);
  model::LayerModel scaled = from_fractions(whole, GetParam().cut);
  // The network modelled: forced routings shared out as its fractions' are.
  const model::LayerModel measured = quick_fit(model::at_shape_fraction(whole, parts, parts, GetParam().cut));

  // FLOPs: exact but for a constant term, which the cubic takes as growing:
  // a bias over outputs that do not grow with the shape (a classifier's), a
  // FLOP an output at most.
  ASSERT_EQ(scaled.layers.size(), measured.layers.size());
  for (size_t j = 0; j < measured.layers.size(); ++j) {
    const model::LayerFit& m = measured.layers[j];
    const double outputs = m.output_bytes_per_sample / 4;
    EXPECT_NEAR(scaled.layers[j].forward_flops_per_sample, m.forward_flops_per_sample, outputs + 0.5) << m.path;
    scaled.layers[j].forward_flops_per_sample = m.forward_flops_per_sample;
  }
  ASSERT_TRUE(same_layer_descriptions(scaled, measured));
  expect_bytes_as_profiled(scaled, measured, batch);
  // AdamW's step takes temporaries of its largest parameter's size, and which
  // is largest may change with the width (a ViT's patch embedding grows as
  // the width, its MLP as its square).
  int64_t largest_parameter = 0;
  for (const auto& l : measured.layers) largest_parameter = std::max(largest_parameter, l.parameter_bytes);
  EXPECT_NEAR(scaled.optimizer_peak.at(batch), measured.optimizer_peak.at(batch), static_cast<double>(largest_parameter));
  const double scratch = largest_scratch(measured, batch);
  for (size_t j = 0; j < measured.layers.size(); ++j) {
    for (const auto& [name, figure] : {std::pair{"forward peak", &model::LayerFit::forward_peak},
                                       {"forward gap", &model::LayerFit::forward_gap_peak},
                                       {"backward peak", &model::LayerFit::backward_peak},
                                       {"backward gap", &model::LayerFit::backward_gap_peak}}) {
      EXPECT_NEAR((scaled.layers[j].*figure).at(batch), (measured.layers[j].*figure).at(batch), scratch)
          << measured.layers[j].path << " " << name;
    }
  }
}

// llama-tiny: rotary positions, grouped k/v heads, SwiGLU; gpt-tiny: one
// q/k/v projection, a learned position table, a tied head; bert-hf-tiny:
// token types, a pooler, dropout; llama-tiny-lora: frozen projections with
// adapters of a fixed rank; mixtral-tiny: experts' tokens routed;
// qwen-moe-tiny, whose 6 experts get 8 x 2 / 6 routings of a quarter of its
// 32 tokens (2 or 3 each), and so every quarter's shared out alike;
// qwen3-tiny: a head width apart from the stream's, cut apart from it, and
// q and k normalized per head; gemma3-tiny: a sliding window cut with the
// tokens, in two of its three blocks; deepseek-v3-tiny: latent attention's
// ranks and head parts cut with the widths, a dense block before two
// mixtures with a shared expert. The
// widths alone: qwen-moe-tiny; llama-tiny, FLOPs a quadratic then; vit-tiny,
// whose patches are its image's (a patch embedding, a class token, a
// classifier).
INSTANTIATE_TEST_SUITE_P(
    Cpu, ShapeScaling,
    ::testing::Values(
        Cut{"llama-tiny", model::ShapeCut::tokens_and_widths}, Cut{"gpt-tiny", model::ShapeCut::tokens_and_widths},
        Cut{"bert-hf-tiny", model::ShapeCut::tokens_and_widths}, Cut{"llama-tiny-lora", model::ShapeCut::tokens_and_widths},
        Cut{"mixtral-tiny", model::ShapeCut::tokens_and_widths}, Cut{"qwen-moe-tiny", model::ShapeCut::tokens_and_widths},
        Cut{"qwen-moe-tiny", model::ShapeCut::widths}, Cut{"qwen3-tiny", model::ShapeCut::tokens_and_widths},
        Cut{"gemma3-tiny", model::ShapeCut::tokens_and_widths}, Cut{"deepseek-v3-tiny", model::ShapeCut::tokens_and_widths},
        Cut{"llama-tiny", model::ShapeCut::widths}, Cut{"vit-tiny", model::ShapeCut::widths}),
    [](const auto& info) {
      return test_support::identifier(info.param.network) + (info.param.cut == model::ShapeCut::widths ? "_widths" : "");
    });

// llama-tiny's models at 1/4, 2/4 and 3/4 of its shape.
std::vector<model::ModelAtFraction> llama_fractions() {
  const model::NetworkConfig llama = model::load_network_config("llama-tiny");
  std::vector<model::ModelAtFraction> fractions;
  for (int k = 1; k <= 3; ++k) {
    fractions.push_back({k, quick_fit(model::at_shape_fraction(llama, k, parts, model::ShapeCut::tokens_and_widths))});
  }
  return fractions;
}

// Times grow with the work that takes them: each layer's by its FLOPs, a
// segment's recompute as its layers' forward (not by their FLOPs together,
// which the matmuls lead), the rest of the step (the glue between layers)
// by the bytes the layers move (not by the FLOPs' cubic).
TEST(ShapeScaling, TimesGrowWithTheirWork) {
  std::vector<model::ModelAtFraction> fractions = llama_fractions();
  for (auto& f : fractions) f.model.rest_seconds.per_sample = 1e-3 * f.k;  // what a CPU measures of it is noise
  const model::LayerModel whole = model::at_full_shape(fractions, parts, model::ShapeCut::tokens_and_widths, "test");
  const model::LayerModel& largest = fractions.back().model;
  const auto sum = [](const model::LayerModel& m, const auto& of, const std::string& segment) {
    double total = 0;
    for (const auto& l : m.layers) total += segment.empty() || l.segment == segment ? of(l) : 0;
    return total;
  };
  const auto forward = [](const model::LayerFit& l) { return l.forward_seconds.per_sample; };
  const auto moved = [](const model::LayerFit& l) { return l.forward_bytes_moved_per_sample; };
  for (size_t s = 0; s < whole.segments.size(); ++s) {
    const std::string& path = whole.segments[s].path;
    EXPECT_NEAR(whole.segments[s].recompute_seconds.per_sample / sum(whole, forward, path),
                largest.segments[s].recompute_seconds.per_sample / sum(largest, forward, path), 1e-9)
        << path;
  }
  EXPECT_NEAR(whole.rest_seconds.per_sample, largest.rest_seconds.per_sample * sum(whole, moved, "") / sum(largest, moved, ""),
              1e-9 * whole.rest_seconds.per_sample);
}

// The optimizer step, a pass over the state: on a CPU it grows with the
// state; on a catalog GPU, where small models' steps are their kernels'
// launches, by the bytes the whole adds (AdamW's 7 a trained byte) at the
// GPU's bandwidth and the memory efficiency fitted there.
TEST(ShapeScaling, TheOptimizerStepGrowsWithTheStateOrOnAGpuByTheBytesItAdds) {
  std::vector<model::ModelAtFraction> fractions = llama_fractions();
  for (auto& f : fractions) f.model.optimizer_seconds = {0, 0, 0.03};  // launch-bound: the same at every fraction
  const model::LayerModel& largest = fractions.back().model;
  const model::LayerModel on_cpu = model::at_full_shape(fractions, parts, model::ShapeCut::tokens_and_widths, "test");
  EXPECT_NEAR(on_cpu.optimizer_seconds.fixed, 0.03 * on_cpu.static_bytes / largest.static_bytes, 1e-12);

  const model::HardwareSpec h200 = model::load_hardware("H200");
  const double eta = 0.4;
  for (auto& f : fractions) {
    f.model.machine = {"cuda:0", "NVIDIA H200", static_cast<int64_t>(h200.memory_bytes), 0, "", "", "", "cupti"};
    f.model.roofline = model::RooflineFit{h200.name, 0.6, eta, 0.5, eta};
  }
  const model::LayerModel on_gpu = model::at_full_shape(fractions, parts, model::ShapeCut::tokens_and_widths, "test");
  const auto trained = [](const model::LayerModel& m) {
    double bytes = 0;
    for (const auto& l : m.layers) bytes += static_cast<double>(l.trainable_bytes());
    return bytes;
  };
  ASSERT_GT(trained(on_gpu), trained(largest));
  EXPECT_NEAR(on_gpu.optimizer_seconds.fixed, 0.03 + 7 * (trained(on_gpu) - trained(largest)) / (h200.memory_bandwidth * eta),
              1e-12);
  EXPECT_EQ(on_gpu.optimizer_seconds.per_sample, 0);
}

TEST(ShapeScaling, ThreeDistinctFractions) {
  const model::NetworkConfig llama = model::load_network_config("llama-tiny");
  const model::ShapeCut cut = model::ShapeCut::tokens_and_widths;
  const model::LayerModel quarter = quick_fit(model::at_shape_fraction(llama, 1, parts, cut));
  EXPECT_THROW(model::at_full_shape({{1, quarter}, {1, quarter}, {2, quarter}}, parts, cut, "test"), InputError);
  EXPECT_THROW(model::at_full_shape({{1, quarter}}, parts, cut, "test"), InputError);
}

}  // namespace
}  // namespace papaya::profiler
