// `papaya train --nproc 2 --pp 2`: two pipeline stages on loopback (1F1B)
// train as one process does at the global batch, each holding what
// `predict --gpus 2 --pp 2` says its stage holds.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/rank_checks.h"
#include "tests/cli/run_papaya.h"

namespace papaya::testing {
namespace {

using nlohmann::json;

// Under keep and under plans of memory optimizations, at 2 and 4
// micro-batches of 2: the losses are one process's at the global batch (the
// same samples, the gradients added over the micro-batches; a quantizing
// plan's first only, its stochastic rounding drawn per micro-batch), each stage's
// static bytes its layers' (together, one process's), and each stage's peak
// the model's within 3 %: its layers' one-micro-batch peak plus the
// micro-batches it holds in flight (2 on the first stage, 1 on the last) and
// its input.
TEST(PipelineParallel, TwoStagesTrainAsOneProcessWithTheModelsMemory) {
  if (!built_with_gloo()) GTEST_SKIP() << "built without Gloo";
  const TempDir dir("papaya-pp");
  const std::string model_file = profiled_model(dir, "llama-tiny");
  ASSERT_FALSE(::testing::Test::HasFailure());
  for (const std::string plan : {"keep", "recompute-all", "quantize-4"}) {
    for (const int micro_batches : {2, 4}) {
      const std::string what = plan + ", " + std::to_string(micro_batches) + " micro-batches";
      const std::string common = " --network llama-tiny --steps 4 --json --plan " + plan;
      const Outcome alone = run_papaya("train --batch " + std::to_string(2 * micro_batches) + common);
      const Outcome staged =
          run_papaya("train --batch 2 --nproc 2 --pp 2 --timeout 60 --micro-batches " + std::to_string(micro_batches) + common);
      ASSERT_EQ(alone.code, 0) << alone.err;
      ASSERT_EQ(staged.code, 0) << staged.err;
      const json single = json::parse(alone.out), stages = json::parse(staged.out);
      EXPECT_EQ(stages["pipeline"], 2);
      EXPECT_EQ(stages["global_batch"], 2 * micro_batches);
      expect_losses_of_one_process(stages, single, what, plan == "quantize-4" ? 1 : single["losses"].size());
      EXPECT_EQ(stages["ranks"][0]["static_bytes"].get<double>() + stages["ranks"][1]["static_bytes"].get<double>(),
                single["static_bytes"].get<double>())
          << what;
      const json model =
          predicted_stages(model_file, "--batch 2 --gpus 2 --pp 2 --global-batch " + std::to_string(2 * micro_batches) +
                                           " --link ethernet-10g --plan " + plan);
      ASSERT_EQ(model.size(), 2u) << what;
      for (size_t s = 0; s < 2; ++s) {
        EXPECT_EQ(stages["ranks"][s]["static_bytes"].get<double>(), model[s]["static_bytes"].get<double>()) << what;
        expect_peak_near_model(stages["ranks"][s]["peak_bytes"], model[s]["peak_bytes"], what + ", stage " + std::to_string(s));
      }
    }
  }
}

// Two pipelines of two stages as two data-parallel ranks (Megatron's order:
// a stage's data-parallel ranks adjacent), plain and with ZeRO-1 (Megatron-
// LM's distributed optimizer), ZeRO-2 and ZeRO-3 (each micro-batch's
// gradients reduced to their owners, as DeepSpeed and FSDP do) between
// them: the losses are one process's at the global batch, each rank holds
// its stage's static bytes as the model shares them (to one element's: the
// shards cut the stage's parameters laid end to end), and every peak is the
// model's within 3 %.
TEST(PipelineParallel, PipelinesAsDataParallelRanksShardTheirState) {
  if (!built_with_gloo()) GTEST_SKIP() << "built without Gloo";
  const TempDir dir("papaya-pp-dp");
  const std::string model_file = profiled_model(dir, "llama-tiny");
  ASSERT_FALSE(::testing::Test::HasFailure());
  const json single = json::parse(run_papaya("train --network llama-tiny --steps 3 --json --batch 16").out);
  for (const int zero : {0, 1, 2, 3}) {
    const std::string what = "--zero " + std::to_string(zero);
    const Outcome grid = run_papaya(
        "train --network llama-tiny --steps 3 --json --nproc 4 --pp 2 --micro-batches 4 --batch 2 "
        "--timeout 60 " +
        what);
    ASSERT_EQ(grid.code, 0) << grid.err;
    const json ranks = json::parse(grid.out);
    EXPECT_EQ(ranks["global_batch"], 16);
    expect_losses_of_one_process(ranks, single, what);
    const json stages = predicted_stages(model_file, "--batch 2 --gpus 4 --pp 2 --global-batch 16 --link ethernet-10g " + what);
    ASSERT_EQ(stages.size(), 2u) << what;
    expect_ranks_hold_their_stages(ranks, stages, 2, 16, what);
    ASSERT_EQ(ranks["ranks"].size(), 4u);
    for (size_t stage = 0; stage < 2; ++stage) {  // the stage's two shares together, to the byte
      const auto held = [&](size_t data_rank) { return ranks["ranks"][2 * stage + data_rank]["static_bytes"].get<double>(); };
      EXPECT_NEAR(held(0) + held(1), 2 * stages[stage]["static_bytes"].get<double>(), 1) << what << ", stage " << stage;
    }
  }
}

TEST(PipelineParallel, ImpossibleStagesFailBeforeAnyRankStarts) {
  expect_input_error("train --network llama-tiny --pp 2", "--nproc 2");
  expect_input_error("train --network llama-tiny --nproc 2 --pp 3", "--nproc 3");
  expect_input_error("train --network llama-tiny --micro-batches 4", "--pp");
  expect_input_error("train --network llama-tiny --nproc 2 --pp 2 --micro-batches 1", "at least one a stage");
  expect_input_error("train --network llama-tiny --nproc 2 --pp 2 --zero 1", "one data-parallel rank of --pp 2");
  expect_input_error("train --network gpt-tiny --nproc 2 --pp 2", "tied");
  expect_input_error("train --network mlp-tiny --nproc 2 --pp 2", "no chain");
  expect_input_error("train --network llama-tiny --nproc 2 --pp 2 --batch 3 --micro-batches 2 --save /tmp/never.state",
                     "a pipeline of 2 stages with a saved or resumed training state");
}

}  // namespace
}  // namespace papaya::testing
