// The shape axis (model/fit/shape_scaling.h): a transformer profiled at 1/4,
// 2/4 and 3/4 of its shape (tokens, widths, vocabulary) and modelled whole,
// against the network profiled whole. Every tensor a step holds is a
// polynomial of degree 2 in the fraction, so the layers' descriptions, every
// byte figure and the peak of every plan must come out as the whole
// network's, to the byte; FLOPs, a cubic, to the FLOP but for a bias.
#include <gtest/gtest.h>

#include "model/catalog/network_config.h"
#include "model/catalog/shape_fraction.h"
#include "model/catalog/target.h"
#include "model/error.h"
#include "model/fit/shape_scaling.h"
#include "model/plan.h"
#include "model/plan_space/predict.h"
#include "tests/support/quick_fit.h"

namespace papaya::profiler {
namespace {

constexpr int batch = 16;
constexpr int parts = 4;

model::LayerModel from_fractions(const model::NetworkConfig& whole) {
  std::vector<model::ModelAtFraction> fractions;
  for (int k = 1; k <= 3; ++k) fractions.push_back({k, quick_fit(model::at_shape_fraction(whole, k, parts))});
  return model::at_full_shape(fractions, parts, "test");
}

class ShapeScaling : public ::testing::TestWithParam<std::string> {};

TEST_P(ShapeScaling, ThreeFractionsGiveTheWholeNetworksBytes) {
  model::NetworkConfig whole = model::load_network_config(GetParam());
  // Experts' tokens as the modelling commands route them: balanced.
  if (whole.transformer().moe) whole = model::with_expert_routing(whole, 1.0 / whole.transformer().moe->experts);
  model::LayerModel scaled = from_fractions(whole);
  const model::LayerModel measured = quick_fit(whole);

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
  EXPECT_NEAR(scaled.static_bytes, measured.static_bytes, 1.0);
  EXPECT_NEAR(scaled.optimizer_peak.at(batch), measured.optimizer_peak.at(batch), 1.0);
  for (size_t j = 0; j < measured.layers.size(); ++j) {
    const model::LayerFit& s = scaled.layers[j];
    const model::LayerFit& m = measured.layers[j];
    for (const auto& [name, figure] :
         {std::pair{"forward start", &model::LayerFit::forward_start}, {"forward peak", &model::LayerFit::forward_peak},
          {"forward gap", &model::LayerFit::forward_gap_peak}, {"backward start", &model::LayerFit::backward_start},
          {"backward peak", &model::LayerFit::backward_peak}, {"backward gap", &model::LayerFit::backward_gap_peak}}) {
      EXPECT_NEAR((s.*figure).at(batch), (m.*figure).at(batch), 1.0) << m.path << " " << name;
    }
  }
  for (const std::string name : {"keep", "recompute-all", "quantize-4", "recompute-all+quantize-4+invert"}) {
    const model::Plan plan = model::expand_plan_name(name, measured.layout());
    const double s = model::predict(scaled, model::profiled_target(scaled), plan, batch).peak_bytes;
    const double m = model::predict(measured, model::profiled_target(measured), plan, batch).peak_bytes;
    EXPECT_NEAR(s, m, 1.0) << name;
  }
}

// llama-tiny: rotary positions, grouped k/v heads, SwiGLU; gpt-tiny: one
// q/k/v projection, a learned position table, a tied head; bert-hf-tiny:
// token types, a pooler, dropout; llama-tiny-lora: frozen projections with
// adapters of a fixed rank; mixtral-tiny: experts' tokens routed.
INSTANTIATE_TEST_SUITE_P(Cpu, ShapeScaling,
                         ::testing::Values("llama-tiny", "gpt-tiny", "bert-hf-tiny", "llama-tiny-lora", "mixtral-tiny"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

TEST(ShapeScaling, ThreeDistinctFractions) {
  const model::NetworkConfig llama = model::load_network_config("llama-tiny");
  const model::LayerModel quarter = quick_fit(model::at_shape_fraction(llama, 1, parts));
  EXPECT_THROW(model::at_full_shape({{1, quarter}, {1, quarter}, {2, quarter}}, parts, "test"), InputError);
  EXPECT_THROW(model::at_full_shape({{1, quarter}}, parts, "test"), InputError);
}

}  // namespace
}  // namespace papaya::profiler
