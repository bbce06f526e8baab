// Each data-parallel rank's static bytes by ZeRO stage.
#include "model/parallel/sharding.h"

#include <gtest/gtest.h>

#include "model/error.h"

namespace papaya::model {
namespace {

TEST(Sharding, EachStageSplitsOneMoreStateNWays) {
  const double p = 1e9;  // parameters, fp32 AdamW
  const RankStatic whole = whole_static(4 * p, 4 * p, 16 * p);
  EXPECT_DOUBLE_EQ(whole.optimizer, 8 * p);
  EXPECT_DOUBLE_EQ(shard(whole, 8, 0).total(), 16 * p);
  EXPECT_DOUBLE_EQ(shard(whole, 8, 1).total(), 8 * p + 1 * p);
  EXPECT_DOUBLE_EQ(shard(whole, 8, 2).total(), 4 * p + 0.5 * p + 1 * p);
  EXPECT_DOUBLE_EQ(shard(whole, 8, 3).total(), 2 * p);
  EXPECT_DOUBLE_EQ(shard(whole, 1, 3).total(), 16 * p);  // one rank shards nothing
  EXPECT_THROW(shard(whole, 8, 4), InputError);
  EXPECT_THROW(shard(whole, 0, 1), InputError);
}

TEST(Sharding, ATiedWeightIsCountedOnce) {
  // Layers report a shared weight twice; weights and gradients are never more than the static bytes hold.
  const RankStatic whole = whole_static(10.0, 10.0, 16.0);
  EXPECT_DOUBLE_EQ(whole.weights, 8.0);
  EXPECT_DOUBLE_EQ(whole.optimizer, 0.0);
}

// LoRA: 13.5 GB of frozen bf16 weights (2 bytes each), 4 M fp32 adapters
// (16 bytes each with their gradients and AdamW moments): the weights are
// all of the first, the gradients and the optimizer's state the adapters'.
TEST(Sharding, FrozenWeightsHaveNoGradientsNorOptimizerState) {
  const double frozen = 13.5e9, adapters = 4 * 4.2e6;
  const RankStatic whole = whole_static(frozen + adapters, adapters, frozen + 4 * adapters);
  EXPECT_DOUBLE_EQ(whole.weights, frozen + adapters);
  EXPECT_NEAR(whole.gradients, adapters, 1e-6 * adapters);
  EXPECT_NEAR(whole.optimizer, 2 * adapters, 1e-6 * adapters);
  EXPECT_NEAR(shard(whole, 8, 3).total(), (frozen + 4 * adapters) / 8, 1e-3);
}

TEST(Sharding, TheExchangeHoldsAGradientCopyUnlessGradientsAreSharded) {
  const RankStatic whole = whole_static(400e6, 400e6, 1600e6);
  const double bucket = 25e6;
  EXPECT_DOUBLE_EQ(exchange_buffer_bytes(whole, 1, 0, bucket, StateHolding::measured), 0.0);  // one process exchanges nothing
  EXPECT_DOUBLE_EQ(exchange_buffer_bytes(whole, 4, 0, bucket, StateHolding::measured), 400e6);
  EXPECT_DOUBLE_EQ(exchange_buffer_bytes(whole, 4, 1, bucket, StateHolding::measured), 400e6);
  EXPECT_DOUBLE_EQ(exchange_buffer_bytes(whole, 4, 2, bucket, StateHolding::measured), 50e6);
  EXPECT_DOUBLE_EQ(exchange_buffer_bytes(whole, 4, 3, bucket, StateHolding::measured), 50e6);
  EXPECT_DOUBLE_EQ(exchange_buffer_bytes(whole_static(4e6, 4e6, 16e6), 4, 2, bucket, StateHolding::measured),
                   4e6);  // less than a bucket
}

// Megatron-LM's own table of bytes a parameter in bf16 with fp32 main
// gradients (its distributed optimizer's guide): 18 plain, 6 + 12/d with
// the distributed optimizer; its gradient buffer is reduced in place.
TEST(Sharding, MegatronHoldsHalfWeightsFp32MainGradientsAndTwelveBytesOfOptimizerState) {
  const double p = 1e9;  // parameters, measured as fp32 (4 bytes)
  const RankStatic whole = megatron_static(4 * p, 4 * p);
  EXPECT_DOUBLE_EQ(whole.weights, 2 * p);
  EXPECT_DOUBLE_EQ(whole.gradients, 4 * p);
  EXPECT_DOUBLE_EQ(whole.optimizer, 12 * p);
  EXPECT_DOUBLE_EQ(shard(whole, 8, 0).total(), 18 * p);
  EXPECT_DOUBLE_EQ(shard(whole, 8, 1).total(), 6 * p + 12 * p / 8);
  EXPECT_DOUBLE_EQ(exchange_buffer_bytes(whole, 8, 0, 25e6, StateHolding::megatron), 0.0);
  // Frozen weights stay as measured (a LoRA's base in bf16); only the adapters carry the rest.
  const double frozen = 13.5e9, adapters = 4 * 4.2e6;
  const RankStatic lora = megatron_static(frozen + adapters, adapters);
  EXPECT_DOUBLE_EQ(lora.weights, frozen + adapters / 2);
  EXPECT_DOUBLE_EQ(lora.gradients + lora.optimizer, 4 * adapters);
}

}  // namespace
}  // namespace papaya::model
