// Recomputed segments and attention cores: gradients bit-identical to
// keeping everything.
#include <gtest/gtest.h>

#include "executor/data.h"
#include "executor/memory.h"
#include "executor/random_state.h"
#include "model/plan.h"
#include "tests/executor/moms_fixture.h"

namespace papaya::executor {
namespace {

using testing::planned;
using testing::recompute_segments;
using testing::tiny_config;

class Recompute : public ::testing::TestWithParam<std::string> {};

TEST_P(Recompute, GradientsAreBitIdenticalToKeep) {
  const auto config = tiny_config(GetParam(), 0.1);
  auto data = make_synthetic_data(config, torch::kCPU, 1);
  auto keep = planned(config, "keep");
  auto recompute = planned(config, recompute_segments(keep.layout));
  // Two steps: batch-norm statistics must move once per step, as without checkpointing.
  for (int i = 0; i < 2; ++i) {
    const Batch batch = data->next(4);
    const auto exact = testing::step(*keep.network, batch, 11 + i);
    const auto again = testing::step(*recompute.network, batch, 11 + i);
    EXPECT_EQ(again.loss, exact.loss);
    EXPECT_TRUE(testing::identical(again, exact)) << "step " << i;
  }
  const auto keep_buffers = keep.network->buffers(), recompute_buffers = recompute.network->buffers();
  for (size_t i = 0; i < keep_buffers.size(); ++i) EXPECT_TRUE(torch::equal(keep_buffers[i], recompute_buffers[i]));
}

// Fused attention keeps no dropout mask: a recomputed block draws the same
// one again from the seed its forward drew, and so every gradient is keep's.
TEST(RecomputeFusedAttention, DrawsTheSameAttentionDropoutAgain) {
  auto config = tiny_config("gpt-tiny", 0.1);
  std::get<model::TransformerConfig>(config.body).attention_dropout = 0.1;
  const Batch batch = make_synthetic_data(config, torch::kCPU, 1)->next(4);
  auto keep = planned(config, "keep");
  auto recompute = planned(config, recompute_segments(keep.layout));
  const auto exact = testing::step(*keep.network, batch, 11);
  const auto again = testing::step(*recompute.network, batch, 11);
  EXPECT_EQ(again.loss, exact.loss);
  EXPECT_TRUE(testing::identical(again, exact));
  // And the dropout does drop: another seed, another loss.
  EXPECT_NE(testing::step(*keep.network, batch, 12).loss, exact.loss);
}

TEST_P(Recompute, QuantizedInputGradientsAreClose) {
  const auto config = tiny_config(GetParam(), 0.1);
  const Batch batch = make_synthetic_data(config, torch::kCPU, 1)->next(4);
  auto keep = planned(config, "keep");
  const auto exact = testing::step(*keep.network, batch);
  const auto error = [&](const char* input) {
    return testing::relative_error(testing::step(*planned(config, recompute_segments(keep.layout, input)).network, batch), exact);
  };
  // The error follows the rounding step: 8-bit codes have a 17th of 4-bit
  // codes' step, and masks recomputed from the rounded input (ReLU after
  // batch-norm) flip where values are near 0, an error like the step's
  // square root. On 4 samples one draw's error varies (over 15 rounding
  // seeds the ratio reached 0.57 on mlp-tiny, 0.30 on resnet-tiny, 0.07 on
  // the transformers): 8 bits must beat 4 bits.
  const double q8 = error("quantize-8"), q4 = error("quantize-4");
  EXPECT_LT(q8, q4) << "quantize-4's error " << q4;
  EXPECT_LT(q8, 0.1);
}

INSTANTIATE_TEST_SUITE_P(Zoo, Recompute, ::testing::Values("gpt-tiny", "resnet-tiny", "mlp-tiny", "bert-tiny", "bert-hf-tiny"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// The whole-network plan also recomputes the LM head's log-probabilities
// (in chunks): equal within float rounding.
TEST(RecomputeAll, MatchesKeepWithinRounding) {
  const auto config = tiny_config("gpt-tiny", 0.1);
  const Batch batch = make_synthetic_data(config, torch::kCPU, 1)->next(4);
  const auto exact = testing::step(*planned(config, "keep").network, batch);
  const auto all = testing::step(*planned(config, "recompute-all").network, batch);
  EXPECT_LT(testing::relative_error(all, exact), 1e-5);
}

// Selective recompute: each attention core run again in backward from q, k
// and v, its dropout's masks drawn again from the same state. The gradients
// are keep's to the bit, and the forward ends holding fewer bytes by exactly
// each block's probabilities, dropout mask (a byte a value) and dropped
// probabilities less the random state it keeps, and the probabilities alone
// where the attention has no dropout.
TEST(RecomputeAttention, GradientsAreBitIdenticalToKeepAndTheProbabilitiesAreLetGo) {
  for (const double dropout : {0.1, 0.0}) {
    auto config = testing::materialized(tiny_config("gpt-tiny", dropout));
    auto& t = std::get<model::TransformerConfig>(config.body);
    t.attention_dropout = dropout;
    const int64_t batch_size = 4;
    const Batch batch = make_synthetic_data(config, torch::kCPU, 1)->next(batch_size);
    const auto held_after_forward = [&](Network& network) {
      const MemoryTracker memory(torch::kCPU);
      const int64_t before = memory.current();
      torch::manual_seed(3);
      const torch::Tensor loss = network.loss(batch);
      return memory.current() - before;
    };
    auto keep = planned(config, "keep");
    auto selective = planned(config, "recompute-attention");
    const double probabilities = static_cast<double>(batch_size * t.heads * t.seq_len * t.seq_len);
    // With a dropout, each core keeps the generator's state (a few KB) instead.
    const double state = dropout > 0 ? static_cast<double>(RandomState::capture(torch::kCPU).cpu.nbytes()) : 0;
    const double per_block = dropout > 0 ? probabilities * (4 + 1 + 4) - state : probabilities * 4;
    EXPECT_EQ(held_after_forward(*keep.network) - held_after_forward(*selective.network), per_block * t.layers)
        << "dropout " << dropout;
    const auto exact = testing::step(*keep.network, batch, 11);
    const auto again = testing::step(*selective.network, batch, 11);
    EXPECT_EQ(again.loss, exact.loss);
    EXPECT_TRUE(testing::identical(again, exact)) << "dropout " << dropout;
  }
}

}  // namespace
}  // namespace papaya::executor
