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
  linear.register_parameter("weight", torch::randn({4, 4}), false);
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
  EXPECT_NE(text.out.find("(TorchScript Net), 32 parameters, 3 layers, 2 segments"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("forward(Tensor x) -> Tensor"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("inputs (papaya.json): float32[B,4]"), std::string::npos) << text.out;

  const Outcome json = run_papaya("inspect " + path + " --input 'float32[B,4]' --json");
  ASSERT_EQ(json.code, 0) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["inputs_from"], "--input");
  EXPECT_EQ(doc["layers"], 3);
  EXPECT_EQ(doc["segments"], 2);
  ASSERT_EQ(doc["modules"].size(), 4u);
  EXPECT_EQ(doc["modules"][2]["path"], "features.b0");
  EXPECT_EQ(doc["modules"][2]["type"], "Linear");
  EXPECT_EQ(doc["modules"][2]["parameters"], 16);
}

TEST(InspectCommand, BadInputIsOneLineAndExitTwo) {
  TempDir dir("papaya-inspect-bad");
  const std::string path = saved_network(dir, {});
  expect_input_error("inspect " + path + " --input 'float32[B,4]' --input 'float32[B,4]'",
                     "forward takes 1 input(s) (x), --input gives 2");
  expect_input_error("inspect " + path + " --input 'float[B,4]'", "unknown dtype 'float'");
  expect_input_error("inspect " + std::string(PAPAYA_SOURCE_DIR) + "/configs/networks/gpt-tiny.json",
                     "not a TorchScript archive (no zip header)");
}

}  // namespace
}  // namespace papaya::testing
