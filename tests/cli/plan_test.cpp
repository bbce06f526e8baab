// End-to-end runs of papaya plan (on a synthetic model), papaya recommend and
// papaya train --plan auto (profiling gpt-tiny on the CPU).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/json_file.h"
#include "model/layer_model.h"
#include "model/plan.h"
#include "model/plan_space/predict.h"
#include "model/profile.h"
#include "tests/cli/run_papaya.h"
#include "tests/support/synthetic_profile.h"

namespace papaya::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class PlanCommands : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("papaya-plan-cli-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    model::write_profile(path("profile.json"), make_profile(gpt_like(2)));
    model_ = path("model.json");
    const Outcome fit = run_papaya("fit " + path("profile.json") + " --out " + model_);
    ASSERT_EQ(fit.code, 0) << fit.err;
    const model::LayerModel m = model::read_layer_model(model_);
    static_bytes_ = m.static_bytes;
    const double keep = model::predict(m, model::profiled_target(m), model::expand_plan_name("keep", m.layout()), 16).peak_bytes;
    budget_ = std::llround(m.static_bytes + 0.5 * (keep - m.static_bytes));
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string budget() const { return std::to_string(budget_); }

  fs::path dir_;
  std::string model_;
  double static_bytes_ = 0;
  int64_t budget_ = 0;
};

TEST_F(PlanCommands, FixedBatchPlanFileIsWhatPredictPredicts) {
  const Outcome run = run_papaya("plan " + model_ + " --budget " + budget() + " --batch 16 --out " + path("p.json") + " --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json out = json::parse(run.out);
  EXPECT_EQ(out["batch"], 16);
  EXPECT_FALSE(out["batch_chosen"].get<bool>());
  EXPECT_LE(out["peak_bytes"].get<double>(), budget_);
  EXPECT_EQ(out["global"].size(), 30u);
  ASSERT_TRUE(fs::exists(path("p.json")));
  const json file = json::parse(std::ifstream(path("p.json")));
  EXPECT_EQ(file["predicted"]["batch"], 16);
  EXPECT_DOUBLE_EQ(file["predicted"]["budget_bytes"].get<double>(), budget_);
  // papaya predict reads the file and predicts the same.
  const Outcome again = run_papaya("predict " + model_ + " --batch 16 --plan " + path("p.json") + " --json");
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_DOUBLE_EQ(json::parse(again.out)[0]["peak_bytes"].get<double>(), out["peak_bytes"].get<double>());
  EXPECT_DOUBLE_EQ(json::parse(again.out)[0]["samples_per_s"].get<double>(), out["samples_per_s"].get<double>());
}

TEST_F(PlanCommands, ChoosesTheBatchAndShowsThePlanAndPapayasTable) {
  const Outcome run = run_papaya("plan " + model_ + " --budget " + budget() + " --plot " + path("plan.svg"));
  ASSERT_EQ(run.code, 0) << run.err;
  for (const char* text : {"plan: ", "the batch with the most samples/s", "best whole-network combination", "recomputed segments",
                           "saved tensors", "PAPAYA's table", "baseline", "figure written"}) {
    EXPECT_NE(run.out.find(text), std::string::npos) << text << "\n" << run.out;
  }
  std::stringstream svg;
  svg << std::ifstream(path("plan.svg")).rdbuf();
  EXPECT_NE(svg.str().find("<svg"), std::string::npos);
  EXPECT_NE(svg.str().find("budget"), std::string::npos);
}

TEST_F(PlanCommands, NoVarianceMeansLossless) {
  // A budget recompute-all fits, so that a lossless plan exists.
  const model::LayerModel m = model::read_layer_model(model_);
  const double lossless =
      model::predict(m, model::profiled_target(m), model::expand_plan_name("recompute-all", m.layout()), 16).peak_bytes;
  const Outcome run =
      run_papaya("plan " + model_ + " --budget " + std::to_string(std::llround(lossless)) + " --batch 16 --variance 0 --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json out = json::parse(run.out);
  EXPECT_EQ(out["variance"].get<double>(), 0);
  for (const auto& group : out["tensors"]) {
    const std::string s = group["strategy"];
    EXPECT_TRUE(s == "keep" || s == "recomputed" || s == "recompute" || s == "quantize-1" || s == "swap") << s;
  }
}

// With --gpus and no --zero the planner also chooses the stage: the plan
// file says which, and the fastest of the four stages is what it chose.
TEST_F(PlanCommands, ChoosesTheZeroStageForDataParallelGpus) {
  const std::string plan = "plan " + model_ + " --budget 2GiB --hardware A100-40GB --gpus 4 --json";
  const Outcome chosen = run_papaya(plan + " --out " + path("dp.plan.json"));
  ASSERT_EQ(chosen.code, 0) << chosen.err;
  const nlohmann::json doc = nlohmann::json::parse(chosen.out);
  EXPECT_EQ(doc["data_parallel"]["gpus"], 4);
  const int stage = doc["data_parallel"]["zero"];
  const nlohmann::json file = model::read_json_file(path("dp.plan.json"), "plan");
  EXPECT_EQ(file["predicted"]["gpus"], 4);
  EXPECT_EQ(file["predicted"]["zero"], stage);
  for (int s = 0; s <= 3; ++s) {
    const Outcome at = run_papaya(plan + " --zero " + std::to_string(s));
    ASSERT_EQ(at.code, 0) << at.err;
    EXPECT_LE(nlohmann::json::parse(at.out)["samples_per_s"].get<double>(), doc["samples_per_s"].get<double>() * (1 + 1e-12))
        << "stage " << s;
  }
}

TEST_F(PlanCommands, BadInputExitsTwo) {
  expect_input_error("plan " + model_ + " --budget lots", "--budget");
  expect_input_error("plan " + path("absent.json") + " --budget 1GiB", "absent.json");
  expect_input_error("plan " + model_ + " --budget " + std::to_string(std::llround(static_bytes_ / 2)),
                     "weights, gradients and optimizer state");
  expect_input_error("plan " + model_ + " --budget " + std::to_string(std::llround(static_bytes_ + 1)),
                     "needs with the most memory-saving plan");
  expect_input_error("plan " + model_ + " --budget 1GiB --hardware TPU-v9", "TPU-v9");
  expect_input_error("plan " + model_ + " --budget 1GiB --batch 0", "--batch");
  expect_input_error("plan " + model_ + " --budget 1GiB --variance -1", "--variance");
  expect_input_error("plan " + model_ + " --budget 1GiB --plot " + path("p.gif"), ".svg or .png");
  expect_input_error("plan " + model_, "--budget");
}

TEST_F(PlanCommands, RecommendProfilesFitsAndPlans) {
  const std::string out = path("tiny.plan.json");
  const Outcome run = run_papaya("recommend --network gpt-tiny --device cpu --out " + out + " --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json doc = json::parse(run.out);
  EXPECT_EQ(doc["network"], "gpt-tiny");
  EXPECT_NE(doc["budget_source"].get<std::string>().find("half-way"), std::string::npos);
  EXPECT_LE(doc["peak_bytes"].get<double>(), doc["budget_bytes"].get<double>());
  EXPECT_GE(doc["why"].size(), 6u);
  for (const auto& why : doc["why"]) {
    for (const char* key : {"optimization", "saves", "costs", "max_batch", "verdict", "why"})
      EXPECT_TRUE(why.contains(key)) << key;
  }
  ASSERT_TRUE(fs::exists(out));
  ASSERT_TRUE(fs::exists(path("tiny.model.json")));
  // The files fit together: predict reads the plan against the model.
  const Outcome again = run_papaya("predict " + path("tiny.model.json") + " --batch " + std::to_string(doc["batch"].get<int>()) +
                                   " --plan " + out + " --json");
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_DOUBLE_EQ(json::parse(again.out)[0]["peak_bytes"].get<double>(), doc["peak_bytes"].get<double>());
}

TEST_F(PlanCommands, RecommendTellsWhy) {
  const Outcome run = run_papaya("recommend --network gpt-tiny --device cpu --budget 64MiB --batch 4 --out " + path("r.json"));
  ASSERT_EQ(run.code, 0) << run.err;
  for (const char* text : {"budget: 64.00 MiB (--budget)", "why:", "recompute-all", "quantize-4", "invert", "worth it alone",
                           "PAPAYA's table", "plan written to"}) {
    EXPECT_NE(run.out.find(text), std::string::npos) << text << "\n" << run.out;
  }
}

TEST_F(PlanCommands, RecommendBadInputExitsTwo) {
  expect_input_error("recommend --network no-such-net --out " + path("x.json"), "no-such-net");
  expect_input_error("recommend --network gpt-tiny --device cpu --out " + path("absent/x.json"), "cannot write");
  expect_input_error("recommend --network gpt-tiny --device cpu --budget 1KiB --out " + path("x.json"),
                     "weights, gradients and optimizer state");
}

// Plans gpt-tiny at batch 16 within a budget half-way between static and
// keep's measured peak, trains with the plan, and checks the run against both.
TEST_F(PlanCommands, TrainAutoPlansThenTrainsWithinTheBudget) {
  const Outcome keep = run_papaya("train --network gpt-tiny --batch 16 --steps 4 --json");
  ASSERT_EQ(keep.code, 0) << keep.err;
  const json k = json::parse(keep.out);
  const double budget = 0.5 * (k["static_bytes"].get<double>() + k["peak_bytes"].get<double>());
  const Outcome run = run_papaya("train --network gpt-tiny --plan auto --budget " + std::to_string(std::llround(budget)) +
                                 "B --batch 16 --steps 4 --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json doc = json::parse(run.out);
  EXPECT_EQ(doc["batch"], 16);
  EXPECT_DOUBLE_EQ(doc["budget_bytes"].get<double>(), static_cast<double>(std::llround(budget)));
  const double predicted = doc["predicted"]["peak_bytes"].get<double>();
  const double measured = doc["peak_bytes"].get<double>();
  EXPECT_LE(predicted, budget);
  EXPECT_NEAR(predicted, measured, 0.05 * measured);
  EXPECT_LT(measured, k["peak_bytes"].get<double>());
  EXPECT_GT(doc["predicted"]["samples_per_s"].get<double>(), 0);
}

TEST_F(PlanCommands, TrainAutoShowsPredictedBesideMeasured) {
  const Outcome run = run_papaya("train --network gpt-tiny --plan auto --budget 64MiB --steps 3");
  ASSERT_EQ(run.code, 0) << run.err;
  for (const char* text : {"plan auto:", "predicted", "measured", "peak memory", "samples/s"}) {
    EXPECT_NE(run.out.find(text), std::string::npos) << text << "\n" << run.out;
  }
}

TEST_F(PlanCommands, TrainAutoBadInputExitsTwo) {
  expect_input_error("train --network gpt-tiny --plan auto", "--budget");
  expect_input_error("train --network gpt-tiny --budget 8MiB", "--plan auto");
  expect_input_error("train --network gpt-tiny --plan auto --budget 1KiB --batch 4", "weights, gradients and optimizer state");
  expect_input_error("train --network gpt-tiny --plan auto --budget 8MiB --data /etc/hostname", "--data");
}

}  // namespace
}  // namespace papaya::testing
