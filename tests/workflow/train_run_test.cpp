// workflow::prepare_train_run and resumed_run: what a training run refuses
// before anything is built, worded in the run's own terms (no flag names:
// the command line's words are cli/'s), and what it fills in.
#include "workflow/training/train_run.h"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "model/catalog/network_config.h"
#include "tests/support/input_error.h"
#include "workflow/training/resumed_run.h"

namespace papaya::workflow {
namespace {

using test_support::input_error_of;

TrainRun run_of(const std::string& network) {
  TrainRun run;
  run.network = network;
  run.network_config = model::load_network_config(network);
  return run;
}

TEST(TrainRun, PreparingFillsInThePrecisionAndTheLayout) {
  TrainRun run = run_of("llama-tiny");
  run.layout.pipeline = 2;
  prepare_train_run(run);
  EXPECT_EQ(run.precision, run.network_config->precision);
  EXPECT_EQ(run.layout.micro_batches, 4);  // two a stage
  EXPECT_EQ(run.layout.micro_batch, run.batch);
  EXPECT_EQ(run.global_batch(), run.batch * 4);
  TrainRun alone = run_of("mlp-tiny");
  prepare_train_run(alone);
  EXPECT_EQ(alone.layout.micro_batches, 1);
  EXPECT_EQ(alone.layout.data, 1);
}

TEST(TrainRun, RefusalsNameTheSettingNotAFlag) {
  const auto refusal = [](TrainRun run) {
    const std::string message = input_error_of([&] { prepare_train_run(run); });
    EXPECT_EQ(message.find("--"), std::string::npos) << message;
    return message;
  };
  // The layout's rules are the planner's (model::check_layout), and what papaya's trainer runs of them.
  TrainRun pipeline = run_of("llama-tiny");
  pipeline.layout.pipeline = 2;
  pipeline.layout.micro_batches = 1;
  EXPECT_EQ(refusal(pipeline), "layout: 1 micro-batches for 2 pipeline stages: 1F1B needs at least one a stage");
  const auto laid_out = [&](const std::function<void(model::ParallelLayout&)>& lay_out) {
    TrainRun run = run_of("llama-tiny");
    lay_out(run.layout);
    return refusal(run);
  };
  const int blocks = run_of("llama-tiny").network_config->transformer().layers;
  EXPECT_NE(laid_out([&](model::ParallelLayout& l) {
              l.pipeline = blocks + 1;
            }).find(std::to_string(blocks) + " blocks for " + std::to_string(blocks + 1) + " pipeline stages x 1 chunks"),
            std::string::npos);
  EXPECT_EQ(laid_out([](model::ParallelLayout& l) { l.zero_stage = 1; }),
            "layout: ZeRO stage 1 shards across data-parallel ranks: it needs 2 or more (d x c is 1)");
  EXPECT_NE(laid_out([](model::ParallelLayout& l) { l.context = 2; }).find("papaya's trainer runs no context parallelism"),
            std::string::npos);
  EXPECT_NE(laid_out([](model::ParallelLayout& l) {
              l.micro_batches = 2;
            }).find("papaya's trainer runs no gradient accumulation without a pipeline"),
            std::string::npos);
  TrainRun tied = run_of("gpt-tiny");
  tied.layout.pipeline = 2;
  EXPECT_NE(refusal(tied).find("a pipeline of 2 stages: gpt-tiny's LM head is tied"), std::string::npos);
  TrainRun chain = run_of("mlp-tiny");
  chain.layout.pipeline = 2;
  EXPECT_NE(refusal(chain).find("is no chain of transformer blocks"), std::string::npos);
  TrainRun saved = run_of("llama-tiny");
  saved.layout.zero_stage = 2;
  saved.save = "never.state";
  EXPECT_NE(refusal(saved).find("saving the training state under ZeRO stage 2"), std::string::npos);
  TrainRun missing = run_of("llama-tiny");
  missing.resume = "no-such.state";
  EXPECT_EQ(refusal(missing), "training state no-such.state: no such file");
  // A mixture built with a few of its experts is for a profile only.
  TrainRun few = run_of("mixtral-tiny");
  nlohmann::json doc = few.network_config->document;
  doc["moe"]["experts"] = 8;
  doc["moe"]["busiest_share"] = 1.0 / 8;
  few.network_config = model::with_profiled_experts(model::parse_network_config(doc, "mixtral-tiny"), 3);
  EXPECT_NE(refusal(few).find("mixtral-tiny: moe/profiled_experts builds a few of its experts"), std::string::npos);
}

TEST(TrainRun, ANetworkMustBeLoadedUnlessAStatesIsResumed) {
  TrainRun run;
  EXPECT_THROW(prepare_train_run(run), std::logic_error);
}

TEST(TrainRun, AResumedRunKeepsTheStatesSettingsAndRefusesOthersGiven) {
  const nlohmann::json recorded = {{"precision", "fp32"}, {"batch", 4},           {"seed", 0},
                                   {"lr", 1e-3},          {"adaptive_every", 50}, {"data", ""}};
  TrainRun given = run_of("gpt-tiny");
  given.resume = "run.state";
  given.steps = 10;
  given.batch = 8;  // not given: the state's
  EXPECT_EQ(resumed_run(given, recorded, 2).batch, 4);
  given.given.insert("batch");
  const std::string message = input_error_of([&] { resumed_run(given, recorded, 2); });
  EXPECT_EQ(message, "training state run.state: its run has batch 4, not 8 (leave the batch out to go on as it was)");
  given.given.clear();
  EXPECT_NE(input_error_of([&] { resumed_run(given, recorded, 10); }).find("at step 10 already"), std::string::npos);
}

}  // namespace
}  // namespace papaya::workflow
