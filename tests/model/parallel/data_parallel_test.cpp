// The model of N data-parallel ranks: per-rank memory by ZeRO stage, and the
// gradient exchange on the link, overlapped with backward bucket by bucket.
#include "model/parallel/data_parallel.h"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "model/error.h"
#include "model/fit/fit_profile.h"
#include "model/layer_model.h"
#include "model/parallel/expert_groups.h"
#include "model/plan_space/plan_space.h"
#include "model/plan_space/predict.h"
#include "tests/support/synthetic_profile.h"

namespace papaya::model {
namespace {

class DataParallelModel : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::ProfileSpec spec = testing::gpt_like(3);
    double parameters = 0;
    for (const auto& l : spec.layers) parameters += static_cast<double>(l.parameter_bytes);
    spec.static_bytes = 4 * parameters;  // fp32 AdamW: weights, gradients, two moments
    spec.optimizer_s = {0, 1e-7, 1e-3};
    model_ = fit_profile(testing::make_profile(spec), "synthetic").model;
    weights_ = parameters;
  }
  Estimate at(const DataParallel& world, const std::string& plan, int64_t batch = 8) const {
    Target target = profiled_target(model_);
    set_data_parallel(target, world);
    return predict(model_, target, expand_plan_name(plan, model_.layout()), batch);
  }
  static DataParallel ranks(int n, int stage, LinkFit link, double bucket = default_bucket_bytes) {
    return {n, stage, "test link", link, bucket};
  }
  // The model with its MLPs made experts: their paths are what marks an
  // expert's layers (renamed in the model's file form, where their tensors
  // name them too).
  LayerModel with_experts() const {
    std::string text = layer_model_to_json(model_).dump();
    for (size_t at = text.find(".mlp.fc"); at != std::string::npos; at = text.find(".mlp.fc", at)) {
      text.replace(at, 5, ".moe.experts.0.");
    }
    return layer_model_from_json(nlohmann::json::parse(text), "experts");
  }
  LayerModel model_;
  double weights_ = 0;
};

TEST_F(DataParallelModel, EachRankHoldsItsShareOfTheStaticStateAndTheBuckets) {
  const LinkFit link{0, 1e12, std::nullopt};
  const Estimate one = at({}, "keep");
  const double w = weights_;
  // Stage 0: everything, plus the buckets' copy of the gradients; 1: half the moments; 2: half the gradients too.
  EXPECT_NEAR(at(ranks(2, 0, link), "keep").peak_bytes - one.peak_bytes, w, 1e-9 * w);
  EXPECT_NEAR(at(ranks(2, 1, link), "keep").peak_bytes - one.peak_bytes, w - w, 1e-9 * w);
  const double stage2 = at(ranks(2, 2, link), "keep").peak_bytes - one.peak_bytes;
  EXPECT_NEAR(stage2, -w / 2 - w + std::min(w, 2 * default_bucket_bytes), 1e-9 * w);
  EXPECT_LT(at(ranks(2, 3, link), "keep").peak_bytes, at(ranks(2, 2, link), "keep").peak_bytes);
  EXPECT_EQ(at(ranks(1, 3, link), "keep").peak_bytes, one.peak_bytes);  // one rank shards nothing
}

TEST_F(DataParallelModel, OneBucketLeavesAfterBackwardAndIsAllExposed) {
  const LinkFit link{1e-3, 1e8, std::nullopt};
  const double whole = std::numeric_limits<double>::infinity();  // every gradient in one bucket
  const Estimate one = at({}, "keep"), four = at(ranks(4, 0, link, whole), "keep");
  EXPECT_NEAR(four.seconds, one.seconds + link.seconds(weights_, 4), 1e-9 * four.seconds);
  EXPECT_NEAR(four.samples_per_s, 4 * 8 / four.seconds, 1e-9 * four.samples_per_s);
}

TEST_F(DataParallelModel, BucketsHideBehindBackwardAndRecomputationHidesMore) {
  // Slow enough that the exchange outlasts backward: 1.5x its compute.
  double backward = 0;
  for (const auto& layer : model_.layers) backward += layer.backward_seconds.at(8);
  const LinkFit link{0, ring_allreduce_wire_bytes(weights_, 2) / (1.5 * backward), std::nullopt};
  const double per_layer = 1;  // each layer's gradients are a bucket
  const Estimate one = at({}, "keep"), two = at(ranks(2, 0, link, per_layer), "keep");
  const double exposed = two.seconds - one.seconds;
  EXPECT_GT(exposed, 0);
  EXPECT_LT(exposed, link.seconds(weights_, 2) - 1e-9);  // some of it hid
  const double exposed_recomputing = at(ranks(2, 0, link, per_layer), "recompute-all").seconds - at({}, "recompute-all").seconds;
  EXPECT_LT(exposed_recomputing, exposed);
}

TEST_F(DataParallelModel, ZeroOneStepsAShardAndGathersTheParametersAfterwards) {
  const LinkFit link{1e-4, 1e9, std::nullopt};
  const double whole = std::numeric_limits<double>::infinity();
  const double optimizer = model_.optimizer_seconds.at(8);
  const double plain = at(ranks(2, 0, link, whole), "keep").seconds, sharded = at(ranks(2, 1, link, whole), "keep").seconds;
  EXPECT_NEAR(sharded - plain, -optimizer / 2 + link.gather_seconds(weights_, 2), 1e-9 * plain);
}

// Expert parallelism leaves each expert fewer ranks than the other layers:
// its gradients leave in buckets of their own, reduced over those ranks (none
// where one rank holds it), and under ZeRO-1 each rank steps its share of
// the experts' state and gathers their weights among those ranks alone.
TEST_F(DataParallelModel, AnExpertsGradientsAndStateAreExchangedOverTheRanksHoldingIt) {
  const LayerModel experts = with_experts();
  double expert_weights = 0;
  for (const LayerFit& l : experts.layers) {
    if (l.path.find(".moe.experts.") != std::string::npos) expert_weights += static_cast<double>(l.parameter_bytes);
  }
  ASSERT_GT(expert_weights, 0);
  const double dense_weights = weights_ - expert_weights;
  const auto at_ranks = [&](const DataParallel& world, const std::string& plan = "keep") {
    Target target = profiled_target(experts);
    set_data_parallel(target, world);
    return predict(experts, target, expand_plan_name(plan, experts.layout()), 8);
  };
  const LinkFit link{1e-3, 1e8, std::nullopt};
  const double whole = std::numeric_limits<double>::infinity();  // each group's gradients in one bucket
  const double one = at_ranks({}).seconds;
  for (const int holding : {4, 2, 1}) {
    DataParallel world = ranks(4, 0, link, whole);
    world.expert_ranks = holding;
    const double expected =
        one + (holding == 4 ? link.seconds(weights_, 4)
                            : link.seconds(dense_weights, 4) + (holding > 1 ? link.seconds(expert_weights, holding) : 0.0));
    EXPECT_NEAR(at_ranks(world).seconds, expected, 1e-9 * expected) << holding << " ranks holding each expert";
  }
  DataParallel plain = ranks(4, 0, link, whole), sharded = ranks(4, 1, link, whole);
  plain.expert_ranks = sharded.expert_ranks = 2;
  const double optimizer = experts.optimizer_seconds.at(8);
  const double share = dense_weights / weights_ / 4 + expert_weights / weights_ / 2;
  const double expected =
      optimizer * (share - 1) + link.gather_seconds(dense_weights, 4) + link.gather_seconds(expert_weights, 2);
  const double difference = at_ranks(sharded).seconds - at_ranks(plain).seconds;
  EXPECT_NEAR(difference, expected, 1e-9 * at_ranks(plain).seconds);
}

// A layout search prices one stage on many worlds from one index
// (PlanSpace::with_data_parallel, which shares it): a space copied onto a
// world prices every plan, at its batch and at another, as a space indexed
// for that world.
TEST_F(DataParallelModel, ASpaceCopiedOntoAWorldPricesAsOneIndexedForIt) {
  const LayerModel experts = with_experts();
  const LinkFit link{1e-3, 1e8, std::nullopt};
  std::vector<DataParallel> worlds = {DataParallel{}, ranks(4, 0, link), ranks(4, 1, link), ranks(2, 2, link), ranks(8, 3, link)};
  worlds[2].expert_ranks = worlds[4].expert_ranks = 2;
  const Target alone = profiled_target(experts);
  const auto indexed = [&](const DataParallel& world) {
    Target target = alone;
    set_data_parallel(target, world);
    return PlanSpace(experts, target, 8);
  };
  const PlanSpace from = indexed(worlds[4]);
  std::set<double> keep_seconds;  // at batch 8, a world each
  for (size_t w = 0; w < worlds.size(); ++w) {
    const PlanSpace direct = indexed(worlds[w]), copied = from.with_data_parallel(worlds[w]);
    for (const std::string plan : {"keep", "recompute-all", "quantize-4", "recompute-all+quantize-8"}) {
      const Plan p = expand_plan_name(plan, experts.layout());
      for (const int64_t batch : {8, 16}) {
        const PlanSpace a = direct.at_batch(batch), b = copied.at_batch(batch);
        const Estimate x = a.evaluate(a.assignment(p)), y = b.evaluate(b.assignment(p));
        EXPECT_EQ(x.peak_bytes, y.peak_bytes) << "world " << w << ", " << plan << " at " << batch;
        EXPECT_EQ(x.seconds, y.seconds) << "world " << w << ", " << plan << " at " << batch;
        EXPECT_EQ(x.samples_per_s, y.samples_per_s) << "world " << w << ", " << plan << " at " << batch;
        if (plan == "keep" && batch == 8) keep_seconds.insert(x.seconds);
      }
    }
  }
  EXPECT_EQ(keep_seconds.size(), worlds.size()) << "each world prices apart";
}

TEST_F(DataParallelModel, RejectsAStageOrRankCountThatCannotBe) {
  Target target = profiled_target(model_);
  EXPECT_THROW(set_data_parallel(target, {2, 4, "x", {}, 1}), InputError);
  EXPECT_THROW(set_data_parallel(target, {0, 0, "x", {}, 1}), InputError);
}

// Expert parallelism takes its GPUs from the data-parallel ranks: each
// expert's state is sharded over those it leaves it (4 ranks, 2 of them
// holding each expert), every other layer's over all.
TEST(ExpertDataParallel, AnExpertsStateIsShardedOverTheRanksHoldingIt) {
  LayerModel m;
  m.layers.resize(2);
  m.layers[0].path = "blocks.0.attn.proj", m.layers[0].parameter_bytes = 1000;
  m.layers[1].path = "blocks.0.moe.experts.0.fc1", m.layers[1].parameter_bytes = 3000;
  m.static_bytes = 4 * 4000;  // fp32 AdamW: 4 bytes of state for each of a weight's
  for (int stage = 0; stage <= 3; ++stage) {
    DataParallel all{4, stage, "test link", LinkFit{}};
    DataParallel expert = all;
    expert.expert_ranks = 2;
    const RankStatic whole = whole_static(m, all);
    const RankStatic dense = shard(whole.share(0.25, 0.25), 4, stage), experts = shard(whole.share(0.75, 0.75), 2, stage);
    EXPECT_DOUBLE_EQ(static_bytes_per_rank(m, expert), dense.total() + experts.total()) << "ZeRO stage " << stage;
    EXPECT_DOUBLE_EQ(static_bytes_per_rank(m, all), shard(whole, 4, stage).total()) << "ZeRO stage " << stage;
    if (stage > 0) EXPECT_GT(static_bytes_per_rank(m, expert), static_bytes_per_rank(m, all));
  }
}

// A layout's data-parallel world: its data x context ranks at its ZeRO stage,
// the experts' state over those expert parallelism leaves each; data
// parallelism alone the layout with every other degree 1.
TEST(ExpertDataParallel, ALayoutsDataParallelWorldIsItsDataAndContextRanks) {
  ParallelLayout l;
  l.tensor = 2, l.pipeline = 2, l.context = 2, l.data = 4, l.expert = 4, l.zero_stage = 1;
  LinkFit link;
  link.latency_s = 1e-5;
  const DataParallel world = data_parallel_of(l, "test link", link, StateHolding::megatron);
  EXPECT_EQ(world.ranks, 8);
  EXPECT_EQ(world.zero_stage, 1);
  EXPECT_EQ(world.expert_ranks, 2);
  EXPECT_EQ(world.link_name, "test link");
  EXPECT_EQ(world.link.latency_s, 1e-5);
  EXPECT_EQ(world.holding, StateHolding::megatron);
  ParallelLayout alone;
  alone.data = 4, alone.zero_stage = 2;
  const DataParallel data = data_parallel_of(alone, "test link", link);
  EXPECT_EQ(data.ranks, 4);
  EXPECT_EQ(data.zero_stage, 2);
  EXPECT_EQ(data.holding, StateHolding::measured);
  EXPECT_EQ(data.expert_ranks_apart(), 0);  // every layer's state over all the ranks
}

}  // namespace
}  // namespace papaya::model
