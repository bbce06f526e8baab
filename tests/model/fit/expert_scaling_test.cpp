// A mixture profiled with 3 of its experts and scaled to all
// (model/fit/expert_scaling.h) against the same network profiled with every
// expert: the
// experts are the same code on the same machine, so every layer's
// description and memory figure, the static bytes and every predicted peak
// must come out as the whole profile's; times are measured and the
// benchmark's to judge (bench/RESULTS.md).
#include "model/fit/expert_scaling.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <ostream>

#include "model/alike_experts.h"
#include "model/catalog/network_config.h"
#include "model/error.h"
#include "model/plan.h"
#include "model/plan_space/predict.h"
#include "tests/support/quick_fit.h"

namespace papaya::profiler {
namespace {

struct Mixture {
  std::string network;
  int experts;
  double busiest;                      // routings forced: the last expert's share, every other alike
  int blocks = 0, profile_blocks = 0;  // 0: the network's, all
};

void PrintTo(const Mixture& m, std::ostream* os) { *os << m.network << " with " << m.experts << " experts"; }

// `m.network` with its experts and blocks as asked.
model::NetworkConfig config_of(const Mixture& m) {
  model::NetworkConfig config = model::load_network_config(m.network);
  config.document["moe"]["experts"] = m.experts;
  if (m.blocks > 0) config.document["layers"] = m.blocks;
  return model::with_expert_routing(config, m.busiest);
}

// `scaled` against `whole`, every expert profiled: each of its layers as
// the whole's of its path (the first expert's standing for as many as it
// counts), every memory figure and each plan's peak.
void expect_scaled_as_profiled(const model::LayerModel& scaled, const model::LayerModel& whole) {
  std::map<std::string, const model::LayerFit*> by_path;
  for (const model::LayerFit& l : whole.layers) by_path[l.path] = &l;
  expect_same_bytes(scaled.static_bytes, whole.static_bytes, "static bytes");
  int standing = 0;
  for (const model::LayerFit& s : scaled.layers) {
    ASSERT_TRUE(by_path.count(s.path)) << s.path;
    model::LayerFit w = *by_path[s.path];
    if (s.repeats > 1) model::stand_for(w, s.repeats), ++standing;
    nlohmann::json described[2];
    model::add_layer_description_json(s, described[0]);
    model::add_layer_description_json(w, described[1]);
    EXPECT_EQ(described[0], described[1]);
    expect_same_memory_figures(s, w);
  }
  EXPECT_GT(standing, 0);
  expect_same_segments_and_peaks(scaled, whole, {1, 16});
}

class ProfileExperts : public ::testing::TestWithParam<Mixture> {};

TEST_P(ProfileExperts, ThreeExpertsScaleToAllAsEveryExpertProfiled) {
  const model::NetworkConfig config = config_of(GetParam());
  const int blocks = GetParam().profile_blocks;
  ASSERT_TRUE(model::experts_routed_alike(config, {1, 2, 4}));
  const model::LayerModel scaled = quick_fit(model::with_profiled_experts(config, 3), blocks);
  const model::LayerModel whole = quick_fit(config, blocks);
  expect_scaled_as_profiled(scaled, whole);
}

INSTANTIATE_TEST_SUITE_P(Cpu, ProfileExperts,
                         ::testing::Values(Mixture{"mixtral-tiny", 8, 1.0 / 8},
                                           // 14 of a sample's 64 routings to the last, 10 to each other one.
                                           Mixture{"qwen-moe-tiny", 6, 14.0 / 64}, Mixture{"gpt-oss-tiny", 8, 1.0 / 8},
                                           // Its dense block and two mixtures profiled of four: blocks and experts scaled.
                                           Mixture{"deepseek-v3-tiny", 8, 1.0 / 8, 4, 3}),
                         [](const auto& info) { return info.param.network.substr(0, info.param.network.find('-')); });

// Only where routing is forced and every expert but the last gets as many
// routings may a few stand for all, and they must be fewer than all.
TEST(ProfileExperts, OnlyExpertsRoutedAlikeStandForOthers) {
  const model::NetworkConfig routed = config_of({"mixtral-tiny", 8, 1.0 / 8});
  EXPECT_TRUE(model::experts_routed_alike(routed, {1, 3}));
  // 64 routings a sample: 15 to the last leaves 49 for 7 (alike); 14, 50 (not).
  EXPECT_TRUE(model::experts_routed_alike(config_of({"mixtral-tiny", 8, 15.0 / 64}), {1, 2}));
  EXPECT_FALSE(model::experts_routed_alike(config_of({"mixtral-tiny", 8, 14.0 / 64}), {1, 2}));
  EXPECT_FALSE(model::experts_routed_alike(model::load_network_config("mixtral-tiny"), {1}));  // the router decides
  EXPECT_THROW(model::with_profiled_experts(model::load_network_config("mixtral-tiny"), 3), InputError);
  EXPECT_THROW(model::with_profiled_experts(routed, 8), InputError);
  EXPECT_THROW(model::with_profiled_experts(routed, 2), InputError);
  EXPECT_EQ(model::with_profiled_experts(model::with_profiled_experts(routed, 3), 0).document, routed.document);
}

}  // namespace
}  // namespace papaya::profiler
