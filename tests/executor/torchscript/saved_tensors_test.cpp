#include "executor/torchscript/saved_tensors.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/runtime/graph_executor.h>

#include <sstream>

namespace papaya::executor::torchscript {
namespace {

using torch::jit::Module;

TEST(SavedTensors, ModulePathFromTheHierarchy) {
  EXPECT_EQ(module_path({"TOP(Net)::forward"}), "");
  EXPECT_EQ(module_path({"TOP(Net)::forward", "layer1(Sequential)::forward", "0(Block)::forward"}), "layer1.0");
  // A method calling another of its own module's (Conv2d's forward, _conv_forward).
  EXPECT_EQ(module_path({"TOP(Net)::forward", "conv(Conv2d)::forward", "SELF(Conv2d)::_conv_forward"}), "conv");
}

// Two linears with a ReLU each; the network's input needs no gradient.
Module two_linears() {
  Module linear("Linear");
  linear.register_parameter("weight", torch::randn({4, 4}).requires_grad_(), false);
  linear.define("def forward(self, x):\n  return torch.relu(x.mm(self.weight))\n");
  Module top("Net");
  top.register_module("a", linear);
  top.register_module("b", linear.clone());
  top.define("def forward(self, x):\n  return self.b.forward(self.a.forward(x)).sum()\n");
  std::stringstream archive;  // as a user's archive is: saved, loaded back
  top.save(archive);
  return torch::jit::load(archive);
}

std::vector<at::Tensor> step(Module& m, const at::Tensor& x) {
  for (auto p : m.parameters()) p.mutable_grad() = at::Tensor();
  m.forward({x}).toTensor().backward();
  std::vector<at::Tensor> grads;
  for (const auto& p : m.parameters()) grads.push_back(p.grad().clone());
  return grads;
}

TEST(SavedTensors, EachModulesBytesAtEveryStepAndTheSameGradients) {
  torch::manual_seed(0);
  Module m = two_linears();
  const at::Tensor x = torch::randn({2, 4});
  const torch::jit::GraphOptimizerEnabledGuard unoptimized(false);
  const std::vector<at::Tensor> plain = step(m, x);

  for (int i = 0; i < 4; ++i) {  // the optimizer would inline the calls after the first
    std::vector<at::Tensor> recorded;
    SavedBytes saved;
    {
      SavedTensorRecorder recorder(m);
      recorded = step(m, x);
      saved = recorder.saved();
    }
    // a: mm keeps x (its weight's gradient needs it), ReLU its output. b: mm
    // keeps a's output (counted in a) and its weight (a parameter), ReLU its
    // output. Four floats a row, two rows.
    const int64_t tensor = 2 * 4 * 4;
    EXPECT_EQ(saved.by_module, (std::map<std::string, int64_t>{{"a", 2 * tensor}, {"b", tensor}})) << "step " << i;
    EXPECT_EQ(saved.tensors, 3);
    ASSERT_EQ(recorded.size(), plain.size());
    for (size_t k = 0; k < plain.size(); ++k) EXPECT_TRUE(at::equal(recorded[k], plain[k])) << "step " << i;
  }
  // Without a recorder nothing is recorded: a second recorder starts empty.
  step(m, x);
  SavedTensorRecorder later(m);
  EXPECT_EQ(later.saved().total(), 0);
}

}  // namespace
}  // namespace papaya::executor::torchscript
