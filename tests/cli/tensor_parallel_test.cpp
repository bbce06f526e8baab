// `papaya train --nproc 2 --tp 2`: a tensor-parallel pair on loopback
// (Megatron-LM's split of the projections and the vocabulary, with or
// without sequence parallelism) trains as one process does, each rank
// holding what `predict --gpus 2 --tp 2 --sp on|off` says.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tests/cli/rank_checks.h"
#include "tests/cli/run_papaya.h"

namespace papaya::testing {
namespace {

using nlohmann::json;

// At batches 2 and 4, and under plans of memory optimizations, with and
// without the tokens between the projections split (sequence parallelism):
// the losses are one process's (a quantizing plan's first only: its tensors
// are quantized in other groups), each rank's static bytes the model's
// (every weight but the norms' halved), and its peak the model's within 3 %.
TEST(TensorParallel, TwoRanksTrainAsOneProcessWithTheModelsMemory) {
  if (!built_with_gloo()) GTEST_SKIP() << "built without Gloo";
  const TempDir dir("papaya-tp");
  const std::string model_file = profiled_model(dir, "llama-tiny");
  ASSERT_FALSE(::testing::Test::HasFailure());
  for (const auto& [batch, plan] :
       std::vector<std::pair<int, std::string>>{{2, "keep"}, {4, "keep"}, {4, "recompute-all"}, {4, "quantize-4"}}) {
    const std::string common = " --network llama-tiny --steps 4 --json --batch " + std::to_string(batch) + " --plan " + plan;
    const Outcome alone = run_papaya("train" + common);
    ASSERT_EQ(alone.code, 0) << alone.err;
    const json single = json::parse(alone.out);
    for (const std::string sp : {"on", "off"}) {
      const std::string what = "batch " + std::to_string(batch) + ", " + plan + ", --sp " + sp;
      const Outcome split = run_papaya("train --nproc 2 --tp 2 --timeout 60 --sp " + sp + common);
      ASSERT_EQ(split.code, 0) << split.err;
      const json ranks = json::parse(split.out);
      EXPECT_EQ(ranks["tensor"], 2);
      EXPECT_EQ(ranks["sequence_parallel"], sp == "on");
      EXPECT_EQ(ranks["global_batch"], batch);
      expect_losses_of_one_process(ranks, single, what, plan == "quantize-4" ? 1 : single["losses"].size());
      const json stages = predicted_stages(
          model_file, "--batch " + std::to_string(batch) + " --gpus 2 --tp 2 --sp " + sp + " --link ethernet-10g --plan " + plan);
      ASSERT_EQ(stages.size(), 1u) << what;
      expect_ranks_hold_their_stages(ranks, stages, 2, 1, what);
    }
  }
}

// Tensor-parallel pairs within two pipeline stages (four ranks, Megatron's
// order: a stage's ranks adjacent), each pair its own group and each share
// a pipeline of its own: the losses are one process's at the global batch
// (a quantizing plan's first step: its rounding is drawn per tensor), each
// rank holds its stage's weights, gradients and AdamW state as the model
// splits them, to the byte, and its peak is the model's within 3 % (the
// row-parallel projections' and the LM head's backward, what a micro-batch
// in flight holds and the received activation a 4-bit first layer leaves
// whole: quantize-4 without the tokens split was 5 % under).
TEST(TensorParallel, WithinPipelineStagesFourRanksTrainAsOneProcess) {
  if (!built_with_gloo()) GTEST_SKIP() << "built without Gloo";
  const TempDir dir("papaya-tp-pp");
  const std::string model_file = profiled_model(dir, "llama-tiny");
  ASSERT_FALSE(::testing::Test::HasFailure());
  for (const auto& [plan, sequence] :
       std::vector<std::pair<std::string, std::string>>{{"keep", "on"}, {"recompute-all", "on"}, {"quantize-4", "off"}}) {
    const std::string what = plan + ", --sp " + sequence;
    const Outcome alone = run_papaya("train --network llama-tiny --steps 3 --json --batch 8 --plan " + plan);
    const Outcome grid = run_papaya(
        "train --network llama-tiny --steps 3 --json --nproc 4 --tp 2 --pp 2 --batch 2 "
        "--micro-batches 4 --timeout 60 --sp " +
        sequence + " --plan " + plan);
    ASSERT_EQ(alone.code, 0) << alone.err;
    ASSERT_EQ(grid.code, 0) << grid.err;
    const json single = json::parse(alone.out), ranks = json::parse(grid.out);
    EXPECT_EQ(ranks["tensor"], 2);
    EXPECT_EQ(ranks["pipeline"], 2);
    EXPECT_EQ(ranks["global_batch"], 8);
    expect_losses_of_one_process(ranks, single, what, plan == "quantize-4" ? 1 : single["losses"].size());
    const json stages = predicted_stages(
        model_file, "--batch 2 --gpus 4 --tp 2 --pp 2 --global-batch 8 --link ethernet-10g --sp " + sequence + " --plan " + plan);
    ASSERT_EQ(stages.size(), 2u) << what;
    expect_ranks_hold_their_stages(ranks, stages, 2, 1, what);
  }
}

// Two tensor-parallel pairs as two data-parallel ranks, with ZeRO across
// the pairs: the losses are one process's at the global batch and every
// rank holds the model's static bytes (to one element's: the shards cut a
// rank's shares of the parameters laid end to end), its peak the model's
// within 3 %.
TEST(TensorParallel, PairsAsDataParallelRanksShardTheirStateWithZero) {
  if (!built_with_gloo()) GTEST_SKIP() << "built without Gloo";
  const TempDir dir("papaya-tp-dp");
  const std::string model_file = profiled_model(dir, "llama-tiny");
  ASSERT_FALSE(::testing::Test::HasFailure());
  const json single = json::parse(run_papaya("train --network llama-tiny --steps 3 --json --batch 4").out);
  for (const int zero : {1, 2, 3}) {
    const std::string what = "--zero " + std::to_string(zero);
    const Outcome grid =
        run_papaya("train --network llama-tiny --steps 3 --json --nproc 4 --tp 2 --batch 2 --timeout 60 " + what);
    ASSERT_EQ(grid.code, 0) << grid.err;
    const json ranks = json::parse(grid.out);
    EXPECT_EQ(ranks["global_batch"], 4);
    expect_losses_of_one_process(ranks, single, what);
    const json stages = predicted_stages(model_file, "--batch 2 --gpus 4 --tp 2 --link ethernet-10g " + what);
    ASSERT_EQ(stages.size(), 1u) << what;
    expect_ranks_hold_their_stages(ranks, stages, 4, 16, what);
  }
}

TEST(TensorParallel, ImpossibleSplitsFailWithOneLine) {
  expect_input_error("train --network llama-tiny --tp 2", "--nproc 2");
  expect_input_error("train --network llama-tiny --nproc 2 --tp 3", "--nproc 3");
  expect_input_error("train --network llama-tiny --nproc 2 --tp 2 --pp 2", "--nproc 4");
  expect_input_error("train --network llama-tiny --nproc 2 --tp 2 --zero 1", "one data-parallel rank of --tp 2");
  expect_input_error("train --network llama-tiny --nproc 3 --tp 2", "--nproc 2 or a multiple of it");
  expect_input_error("train --network llama-tiny --nproc 4 --tp 2 --pp 2 --zero 1", "--zero");
  expect_input_error("train --network gpt-tiny --nproc 2 --tp 2", "bias");  // added once, after the sum
  expect_input_error("train --network mlp-tiny --nproc 2 --tp 2", "decoder LMs");
  expect_input_error("train --network llama-tiny --sp off", "--sp goes with --tp");
  expect_input_error("train --network llama-tiny --nproc 3 --tp 3", "layout: 4 heads do not split over tensor parallelism 3");
  expect_input_error("train --network llama-tiny --nproc 2 --tp 2 --seq-len 33",
                     "layout: 33 tokens do not split over sequence parallelism 2");
}

}  // namespace
}  // namespace papaya::testing
