// A layout's constraints, with the network's shape and without it, and what
// each engine that trains a layout runs.
#include "model/parallel/parallel_layout.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/parallel/engines.h"
#include "tests/support/input_error.h"

namespace papaya::model {
namespace {

using test_support::input_error_of;

TEST(Layout, AnImpossibleSplitNamesItsConstraint) {
  TransformerShape shape{8, 12, 4, 0, 1024};
  const auto error = [&](ParallelLayout l) { return input_error_of([&] { check_layout(l, shape, 0); }); };
  ParallelLayout ok;
  ok.tensor = 4, ok.pipeline = 2, ok.micro_batches = 4, ok.data = 2;
  EXPECT_EQ(error(ok), "");
  ParallelLayout l = ok;
  l.tensor = 8;
  EXPECT_EQ(error(l), "layout: 12 heads do not split over tensor parallelism 8");
  l = ok, l.tensor = 3;
  EXPECT_NE(error(l).find("4 k/v heads do not split over tensor parallelism 3"), std::string::npos);
  l = ok, l.pipeline = 16, l.micro_batches = 16;
  EXPECT_EQ(error(l), "layout: 8 blocks for 16 pipeline stages x 1 chunks: a chunk needs a block");
  l = ok, l.micro_batches = 1;
  EXPECT_EQ(error(l), "layout: 1 micro-batches for 2 pipeline stages: 1F1B needs at least one a stage");
  l = ok, l.context = 3;
  EXPECT_EQ(error(l), "layout: 1024 tokens do not split into 2 x 3 halves for context parallelism 3");
  l = ok, l.expert = 2;
  EXPECT_EQ(error(l), "layout: expert parallelism 2 on a network without experts");
  EXPECT_EQ(input_error_of([&] { check_layout(ok, shape, 12); }), "layout: t x p x c x d = 16 GPUs, not the 12 asked for");
  // A shape without k/v heads is refused, not divided by.
  EXPECT_EQ(input_error_of([&] {
              check_layout(ok, TransformerShape{8, 12, 0, 0, 1024});
            }),
            "layout: 0 k/v heads do not split over tensor parallelism 4 (nor t over them, each copied to t/k/v-heads ranks)");
}

TEST(Layout, WithoutTheNetworkOnlyTheDegreesAreChecked) {
  ParallelLayout l;
  l.tensor = 8, l.pipeline = 64, l.micro_batches = 64, l.context = 3;  // no shape to refuse them
  EXPECT_EQ(input_error_of([&] { check_layout(l); }), "");
  l.micro_batches = 2;
  EXPECT_EQ(input_error_of([&] { check_layout(l); }),
            "layout: 2 micro-batches for 64 pipeline stages: 1F1B needs at least one a stage");
  l.micro_batches = 64, l.sequence = true, l.tensor = 1;
  EXPECT_EQ(input_error_of([&] { check_layout(l); }), "layout: sequence parallelism needs tensor parallelism above 1");
  l.sequence = false, l.zero_stage = 4;
  EXPECT_EQ(input_error_of([&] { check_layout(l); }), "layout: ZeRO stage 4: a ZeRO stage is 0 to 3");
  l.zero_stage = 1;
  EXPECT_EQ(input_error_of([&] { check_layout(l, 64 * 3); }), "");  // over the 3 context ranks
  ParallelLayout one_rank;
  one_rank.tensor = 4, one_rank.zero_stage = 2;
  EXPECT_EQ(input_error_of([&] { check_layout(one_rank); }),
            "layout: ZeRO stage 2 shards across data-parallel ranks: it needs 2 or more (d x c is 1)");
  EXPECT_EQ(input_error_of([&] { check_layout(l, 64); }), "layout: t x p x c x d = 192 GPUs, not the 64 asked for");
}

TEST(Engines, EachEngineRunsWhatItHasSettingsFor) {
  EXPECT_EQ(engine_limits(Engine::megatron).zero_stages, (std::vector<int>{0, 1}));
  EXPECT_EQ(engine_limits(Engine::torchtitan).zero_stages, (std::vector<int>{0, 2, 3}));
  // papaya's trainer gathers ZeRO-3's weights over Gloo alone.
  EXPECT_EQ(engine_limits(Engine::papaya).zero_stages, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(engine_limits(Engine::papaya, false).zero_stages, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(engine_limits(Engine::megatron, false).zero_stages, engine_limits(Engine::megatron).zero_stages);
  EXPECT_TRUE(engine_limits(Engine::megatron).offloads_optimizer);
  EXPECT_FALSE(engine_limits(Engine::torchtitan).offloads_optimizer);
  EXPECT_EQ(engine_limits(Engine::megatron).plans, (std::vector<std::string>{"keep", "recompute-attention", "recompute-all"}));
  // torchtitan's selective checkpointing saves some operators' outputs, not attention's core alone.
  EXPECT_EQ(engine_limits(Engine::torchtitan).plans, (std::vector<std::string>{"keep", "recompute-all"}));
  EXPECT_TRUE(engine_limits(Engine::papaya).plans.empty());  // every plan
  // Megatron-LM holds the weights in the half type and its own main gradients; torchtitan's FSDP2 as papaya does.
  EXPECT_EQ(engine_limits(Engine::megatron).holding, StateHolding::megatron);
  EXPECT_TRUE(engine_limits(Engine::megatron).reduces_after_backward);  // with or without --overlap-grad-reduce
  EXPECT_FALSE(engine_limits(Engine::torchtitan).reduces_after_backward);
  EXPECT_FALSE(engine_limits(Engine::papaya).reduces_after_backward);
  EXPECT_EQ(engine_limits(Engine::torchtitan).holding, StateHolding::measured);
  EXPECT_EQ(engine_limits(Engine::papaya).holding, StateHolding::measured);
}

TEST(Engines, ALayoutAnEngineCannotRunIsRefusedNamingTheSetting) {
  ParallelLayout l;
  l.tensor = 2, l.sequence = true, l.pipeline = 4, l.micro_batches = 8, l.data = 2, l.zero_stage = 2;
  EXPECT_EQ(input_error_of([&] { check_runs_on(l, Engine::papaya); }), "");
  EXPECT_EQ(input_error_of([&] { check_runs_on(l, Engine::megatron); }),
            "layout " + l.label() + ": Megatron-LM runs no ZeRO stage 2");
  EXPECT_EQ(input_error_of([&] { check_runs_on(l, Engine::torchtitan); }), "");
  const auto refused_by_papaya = [&](const ParallelLayout& changed) {
    return input_error_of([&] { check_runs_on(changed, Engine::papaya); });
  };
  ParallelLayout changed = l;
  changed.virtual_stages = 2;
  EXPECT_EQ(refused_by_papaya(changed), "layout " + changed.label() + ": papaya's trainer runs no virtual pipeline stages");
  changed = l, changed.zero_stage = 3;
  EXPECT_EQ(refused_by_papaya(changed), "layout " + changed.label() + ": papaya's trainer runs no ZeRO stage 3 on GPUs");
  EXPECT_EQ(input_error_of([&] { check_runs_on(changed, Engine::papaya, false); }), "");
  changed = l, changed.context = 2;
  EXPECT_EQ(refused_by_papaya(changed), "layout " + changed.label() + ": papaya's trainer runs no context parallelism");
  changed = l, changed.expert = 2;
  EXPECT_EQ(refused_by_papaya(changed), "layout " + changed.label() + ": papaya's trainer runs no expert parallelism");
  changed = l, changed.offload_optimizer = true;
  EXPECT_EQ(refused_by_papaya(changed), "layout " + changed.label() + ": papaya's trainer runs no optimizer offload");
  changed = l, changed.pipeline = 1;
  EXPECT_EQ(refused_by_papaya(changed),
            "layout " + changed.label() + ": papaya's trainer runs no gradient accumulation without a pipeline");
  changed.micro_batches = 1;
  EXPECT_EQ(refused_by_papaya(changed), "");
  changed = l, changed.sequence = false, changed.zero_stage = 3, changed.pipeline = 2;
  EXPECT_EQ(input_error_of([&] { check_runs_on(changed, Engine::torchtitan); }),
            "layout " + changed.label() + ": torchtitan runs no tensor parallelism without sequence parallelism");
}

}  // namespace
}  // namespace papaya::model
