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
#include <optional>
#include <ostream>
#include <vector>

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
  double busiest;                      // routings forced: the last expert's share, the others as even as can be
  int blocks = 0, profile_blocks = 0;  // 0: the network's, all
  int64_t routing_unit = 0;            // forced routings shared out this many at a time (0: all at once)
};

void PrintTo(const Mixture& m, std::ostream* os) { *os << m.network << " with " << m.experts << " experts"; }

// `m.network` with its experts and blocks as asked.
model::NetworkConfig config_of(const Mixture& m) {
  model::NetworkConfig config = model::load_network_config(m.network);
  config.document["moe"]["experts"] = m.experts;
  if (m.blocks > 0) config.document["layers"] = m.blocks;
  if (m.routing_unit > 0) config.document["moe"]["routing_unit"] = m.routing_unit;
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

TEST_P(ProfileExperts, TheStandingExpertsScaleToAllAsEveryExpertProfiled) {
  const model::NetworkConfig config = config_of(GetParam());
  const int blocks = GetParam().profile_blocks;
  const std::optional<int> busier = model::busier_experts_at(config, {1, 2, 4});
  ASSERT_TRUE(busier);
  const model::NetworkConfig few = model::with_profiled_experts(config, busier);
  ASSERT_LT(few.transformer().moe->profiled_experts, GetParam().experts);
  const model::LayerModel scaled = quick_fit(few, blocks);
  const model::LayerModel whole = quick_fit(config, blocks);
  expect_scaled_as_profiled(scaled, whole);
}

INSTANTIATE_TEST_SUITE_P(Cpu, ProfileExperts,
                         ::testing::Values(Mixture{"mixtral-tiny", 8, 1.0 / 8},
                                           // 14 of a sample's 64 routings to the last, 10 to each other one.
                                           Mixture{"qwen-moe-tiny", 6, 14.0 / 64}, Mixture{"gpt-oss-tiny", 8, 1.0 / 8},
                                           // Its dense block and two mixtures profiled of four: blocks and experts scaled.
                                           Mixture{"deepseek-v3-tiny", 8, 1.0 / 8, 4, 3},
                                           // Of a sample's 64 routings 14 to the last, 8 to the first, 7 to each other one:
                                           // a run of one built as it is, one of six stood for by two.
                                           Mixture{"mixtral-tiny", 8, 14.0 / 64, 0, 0, 64},
                                           // 12 to the last, 6 to each of the first seven, 5 to the two after them:
                                           // runs of seven (stood for by two) and two (built as they are).
                                           Mixture{"mixtral-tiny", 10, 12.0 / 64, 0, 0, 64}),
                         [](const auto& info) {
                           return info.param.network.substr(0, info.param.network.find('-')) + "_" +
                                  std::to_string(info.param.experts) + "_" + std::to_string(info.index);
                         });

// Only where routing is forced and gives as many experts a routing more at
// every batch may a few stand for all, and they must be fewer than all.
TEST(ProfileExperts, OnlyExpertsRoutedAlikeStandForOthers) {
  const model::NetworkConfig routed = config_of({"mixtral-tiny", 8, 1.0 / 8});
  EXPECT_EQ(model::busier_experts_at(routed, {1, 3}), 0);
  // 64 routings a sample: 15 to the last leaves 49 for 7 (alike at every batch);
  // 14 leaves 50, one more for one of them, and at twice the batch two more for two.
  EXPECT_EQ(model::busier_experts_at(config_of({"mixtral-tiny", 8, 15.0 / 64}), {1, 2}), 0);
  EXPECT_FALSE(model::busier_experts_at(config_of({"mixtral-tiny", 8, 14.0 / 64}), {1, 2}));
  // Shared out a sample's routings at a time: one more for the same one at every batch.
  EXPECT_EQ(model::busier_experts_at(config_of({"mixtral-tiny", 8, 14.0 / 64, 0, 0, 64}), {1, 2, 4}), 1);
  EXPECT_FALSE(model::busier_experts_at(model::load_network_config("mixtral-tiny"), {1}));  // the router decides
  EXPECT_THROW(model::with_profiled_experts(model::load_network_config("mixtral-tiny"), 0), InputError);
  EXPECT_THROW(model::with_profiled_experts(routed, 7), InputError);  // 7 of the 7 but the last
  // Four experts, one given a routing more: 1 + 2 + 1 built, not fewer than all.
  EXPECT_THROW(model::with_profiled_experts(config_of({"mixtral-tiny", 4, 1.0 / 4}), 1), InputError);
  EXPECT_EQ(model::with_profiled_experts(model::with_profiled_experts(routed, 0), std::nullopt).document, routed.document);
  nlohmann::json wrong = model::with_profiled_experts(routed, 0).document;
  wrong["moe"]["profiled_experts"] = 4;  // the runs' standing experts are 3
  EXPECT_THROW(model::parse_network_config(wrong, "mixtral-tiny"), InputError);
}

TEST(ProfileExperts, EachRunIsStoodForByItsFirstTwo) {
  using Ids = std::vector<int>;
  EXPECT_EQ(model::profiled_expert_ids(model::alike_expert_runs(8, 0)), (Ids{0, 1, 7}));
  EXPECT_EQ(model::profiled_expert_ids(model::alike_expert_runs(8, 1)), (Ids{0, 1, 2, 7}));
  EXPECT_EQ(model::profiled_expert_ids(model::alike_expert_runs(10, 7)), (Ids{0, 1, 7, 8, 9}));
  // Qwen1.5-MoE's fraction: 31 of its 60 experts get 9 of 512 routings, 28 get 8, the last 9.
  EXPECT_EQ(model::profiled_expert_ids(model::alike_expert_runs(60, 31)), (Ids{0, 1, 31, 32, 59}));
  EXPECT_EQ(model::alike_expert_runs(60, 31).size(), 3u);
  EXPECT_EQ(model::alike_expert_runs(60, 31)[1].count, 28);
}

}  // namespace
}  // namespace papaya::profiler
