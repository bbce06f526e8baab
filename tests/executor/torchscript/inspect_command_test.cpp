// papaya inspect, end to end, on an archive defined here.
#include <gtest/gtest.h>
#include <torch/script.h>

#include <nlohmann/json.hpp>

#include "tests/cli/run_papaya.h"

namespace papaya::testing {
namespace {

using torch::jit::Module;

// A block of two linears in a Sequential, and a head; the forward ends in a sum.
std::string saved_network(const TempDir& dir, const torch::jit::ExtraFilesMap& extra) {
  Module linear("Linear");
  linear.register_parameter("weight", torch::randn({4, 4}).requires_grad_(), false);
  linear.define("def forward(self, x):\n  return torch.relu(x.mm(self.weight))\n");
  Module features("Sequential");
  features.register_module("b0", linear);
  features.register_module("b1", linear.clone());
  features.define("def forward(self, x):\n  return self.b1.forward(self.b0.forward(x))\n");
  Module top("Net");
  top.register_module("features", features);
  top.define("def forward(self, x):\n  return self.features.forward(x).sum()\n");
  const std::string path = dir.path("net.pt");
  top.save(path, extra);
  return path;
}

TEST(InspectCommand, ShowsInputsLayersAndSegments) {
  TempDir dir("papaya-inspect");
  const std::string path = saved_network(dir, {{"papaya.json", R"({"inputs": ["float32[B,4]"]})"}});
  const Outcome text = run_papaya("inspect " + path);
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("(TorchScript Net), 32 parameters, 2 layers, 2 segments"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("forward(Tensor x) -> Tensor"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("inputs (papaya.json): float32[B,4]"), std::string::npos) << text.out;

  const Outcome json = run_papaya("inspect " + path + " --input 'float32[B,4]' --json");
  ASSERT_EQ(json.code, 0) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["inputs_from"], "--input");
  EXPECT_EQ(doc["layers"], 2);  // the top's sum runs between layers
  EXPECT_EQ(doc["segments"], 2);
  ASSERT_EQ(doc["modules"].size(), 4u);
  EXPECT_EQ(doc["modules"][2]["path"], "features.b0");
  EXPECT_EQ(doc["modules"][2]["type"], "Linear");
  EXPECT_EQ(doc["modules"][2]["parameters"], 16);
}

// One step at batch 2: b0 saves its input (its weight's gradient needs it;
// the input needs none) and its ReLU's output; b1 saves its own ReLU's output
// (its input is b0's output, counted there; its weight is a parameter).
TEST(InspectCommand, OneStepShowsWhatEachModuleSaves) {
  TempDir dir("papaya-inspect-step");
  const std::string path = saved_network(dir, {{"papaya.json", R"({"inputs": ["float32[B,4]"]})"}});
  const Outcome run = run_papaya("inspect " + path + " --batch 2 --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const auto doc = nlohmann::json::parse(run.out);
  const int64_t tensor = 2 * 4 * 4;
  EXPECT_EQ(doc["step"]["loss"], "output");
  EXPECT_EQ(doc["step"]["saved_bytes"], 3 * tensor);
  EXPECT_EQ(doc["step"]["saved_tensors"], 3);
  EXPECT_EQ(doc["modules"][2]["saved_bytes"], 2 * tensor);  // features.b0
  EXPECT_EQ(doc["modules"][3]["saved_bytes"], tensor);      // features.b1
  EXPECT_EQ(doc["modules"][0]["saved_bytes"], 0);           // the top's sum keeps nothing

  const Outcome text = run_papaya("inspect " + path + " --batch 2");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("one step at batch 2 (loss: output): 96 B saved for backward in 3 tensors"), std::string::npos)
      << text.out;
  expect_input_error("inspect " + path + " --batch 2 --loss mse", "forward returns a scalar, which is the loss; no mse of it");
  expect_input_error("inspect " + path + " --batch 2 --loss l1", "--loss: unknown loss 'l1'");
}

TEST(InspectCommand, BadInputIsOneLineAndExitTwo) {
  TempDir dir("papaya-inspect-bad");
  const std::string path = saved_network(dir, {});
  expect_input_error("inspect " + path + " --input 'float32[B,4]' --input 'float32[B,4]'",
                     "forward takes 1 input(s) (x), --input gives 2");
  expect_input_error("inspect " + path + " --input 'float[B,4]'", "unknown dtype 'float'");
  expect_input_error("inspect " + path + " --batch 2", "--batch: the forward's inputs are needed");
  // The user's forward fails on the inputs given: its own error, on one line.
  expect_input_error(
      "inspect " + path + " --batch 2 --input 'float32[B,5]'",
      "net.pt: running it at batch 2 failed: RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x5 and 4x4)");
  expect_input_error("inspect " + std::string(PAPAYA_SOURCE_DIR) + "/configs/networks/gpt-tiny.json",
                     "not a TorchScript archive (no zip header)");
}

}  // namespace
}  // namespace papaya::testing
