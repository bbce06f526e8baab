// A TorchScript archive through the commands, end to end: recommend profiles
// it, fits and plans; train trains with the plan; the peak it measures is the
// one the plan predicted.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cli/run_papaya.h"
#include "tests/executor/torchscript/fixtures.h"

namespace papaya::testing {
namespace {

const std::string input = " --input 'float32[B,3,8,8]'";

std::string saved_cnn(const TempDir& dir) {
  const std::string path = dir.path("cnn.pt");
  executor::torchscript::testing::small_cnn().save(path);
  return path;
}

TEST(ArchiveCommands, RecommendThenTrainWithThePlanAtThePredictedPeak) {
  TempDir dir("papaya-archive-commands");
  const std::string cnn = saved_cnn(dir);
  // Keep's peak at batch 8, for a budget that keep cannot meet there.
  const Outcome keep = run_papaya("train --network " + cnn + input + " --batch 8 --steps 4 --json");
  ASSERT_EQ(keep.code, 0) << keep.err;
  const double keep_peak = nlohmann::json::parse(keep.out).at("peak_bytes");
  const std::string budget = std::to_string(static_cast<int64_t>(keep_peak * 0.9));

  const std::string plan = dir.path("plan.json");
  const Outcome recommend = run_papaya("recommend --network " + cnn + input + " --budget " + budget + " --out " + plan + " --json");
  ASSERT_EQ(recommend.code, 0) << recommend.err;
  nlohmann::json planned;
  std::ifstream(plan) >> planned;
  const double predicted = planned.at("predicted").at("peak_bytes");
  const int batch = planned.at("batch");
  EXPECT_LE(predicted, std::stod(budget));
  EXPECT_GE(batch, 1);

  const Outcome train = run_papaya("train --network " + cnn + input + " --plan " + plan + " --batch " + std::to_string(batch) +
                                   " --steps 6 --json");
  ASSERT_EQ(train.code, 0) << train.err;
  const auto report = nlohmann::json::parse(train.out);
  const double measured = report.at("peak_bytes");
  EXPECT_NEAR(measured, predicted, 0.03 * predicted) << "plan " << planned.dump();
  EXPECT_EQ(report.at("network"), "cnn");
}

TEST(ArchiveCommands, ProfileWritesLayersByModulePath) {
  TempDir dir("papaya-archive-profile");
  const std::string cnn = saved_cnn(dir);
  const std::string out = dir.path("cnn.profile.json");
  const Outcome run =
      run_papaya("profile --network " + cnn + input + " --batch 1,2 --steps 2 --warmup 1 --probe-batch 0 --out " + out);
  ASSERT_EQ(run.code, 0) << run.err;
  nlohmann::json profile;
  std::ifstream(out) >> profile;
  ASSERT_EQ(profile.at("layers").size(), 10u);
  EXPECT_EQ(profile["layers"][4]["path"], "layers.b0.relu#2");
  EXPECT_EQ(profile["layers"][4]["kind"], "module");
  EXPECT_EQ(profile["network_config"]["family"], "torchscript");
  // The stem saves the image: 3x8x8 floats a sample.
  EXPECT_EQ(profile["layers"][0]["saved"][0]["storage_bytes_per_sample"], 3 * 8 * 8 * 4);
  const Outcome predict = run_papaya("fit " + out + " --out " + dir.path("cnn.model.json"));
  ASSERT_EQ(predict.code, 0) << predict.err;
}

TEST(ArchiveCommands, BadInputIsNamed) {
  TempDir dir("papaya-archive-bad");
  const std::string cnn = saved_cnn(dir);
  expect_input_error("profile --network " + cnn + " --out " + dir.path("p.json"), "the shapes of forward's inputs are not known");
  expect_input_error("train --network " + cnn + input + " --seq-len 8", "--seq-len: " + cnn + " is a TorchScript archive");
  expect_input_error("train --network gpt-tiny --input 'float32[B,4]'", "--input applies to a TorchScript archive");
  expect_input_error("train --network " + cnn + input + " --precision bf16", "a TorchScript network trains in fp32");
  expect_input_error("train --network " + cnn + " --input 'float32[B,3,8]'", "running it forward at batch");
  // Adaptive bits need a backward of papaya's own to estimate sensitivities.
  const std::string plan = dir.path("adaptive.json");
  std::ofstream(plan) << R"({"papaya_plan": 1, "name": "a", "network": "cnn", "tensors": {"stem:input": "adaptive-4"}})";
  expect_input_error("train --network " + cnn + input + " --plan " + plan, "adaptive bits need the layer's own backward");
}

}  // namespace
}  // namespace papaya::testing
