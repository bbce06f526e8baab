// A TorchScript copy of a zoo network, built here from the same config, saves
// what the zoo's own network saves: each layer's tensors, stored under each
// strategy, take the same bytes. The loss is where the two differ: the zoo's
// cross-entropy layer keeps its probabilities; the copy's loss (taken by
// papaya after the forward) saves its log-probabilities and labels, charged
// to the head.
#include <gtest/gtest.h>

#include <regex>

#include "executor/data.h"
#include "executor/storage/stored_bytes.h"
#include "executor/torchscript/imported_network.h"
#include "model/plan.h"
#include "tests/cli/run_papaya.h"
#include "tests/executor/moms_fixture.h"
#include "tests/executor/torchscript/fixtures.h"

namespace papaya::executor::torchscript {
namespace {

// The zoo's mlp (executor/networks/mlp.cpp) of two hidden layers as
// TorchScript: Sequential blocks of a linear and an activation, then a head.
torch::jit::Module mlp_copy(const model::MlpConfig& c) {
  const auto dense = [](int64_t in, int64_t out) {
    torch::jit::Module m("Linear");
    m.register_parameter("weight", (torch::randn({out, in}) / std::sqrt(in)).requires_grad_(), false);
    m.register_parameter("bias", torch::zeros({out}).requires_grad_(), false);
    m.define("def forward(self, x):\n  return torch.linear(x, self.weight, self.bias)\n");
    return m;
  };
  const auto block = [&](int64_t in, int64_t out) {
    torch::jit::Module act("Activation");
    act.define("def forward(self, x):\n  return torch." + c.activation + "(x)\n");
    torch::jit::Module m("Block");
    m.register_module("fc", dense(in, out));
    m.register_module("act", act);
    m.define("def forward(self, x):\n  return self.act.forward(self.fc.forward(x))\n");
    return m;
  };
  torch::jit::Module top("Mlp");
  top.register_module("blocks", testing::sequential(block(c.input, c.hidden[0]), block(c.hidden[0], c.hidden[1])));
  top.register_module("head", dense(c.hidden[1], c.classes));
  top.define("def forward(self, x):\n  return self.head.forward(self.blocks.forward(x))\n");
  return top;
}

// The copy's name of a zoo path: the Sequential's children are b0, b1.
std::string copy_path(const std::string& zoo) {
  return std::regex_replace(zoo, std::regex("^blocks\\.(\\d+)\\."), "blocks.b$1.");
}

std::map<std::string, int64_t> stored_bytes(Network& network, const Batch& batch) {
  StoredBytesRecorder recorder;
  const StoredBytesGuard guard(&recorder);
  network.loss(batch);
  return recorder.bytes();
}

TEST(ZooCopy, EachLayersTensorsTakeTheZoosBytesUnderEveryStrategy) {
  model::NetworkConfig zoo = executor::testing::tiny_config("mlp-tiny");
  std::get<model::MlpConfig>(zoo.body).activation = "gelu";  // ReLU's 1-bit mask is the zoo's own layer's
  ASSERT_EQ(zoo.mlp().hidden.size(), 2u);
  const papaya::testing::TempDir dir("papaya-zoo-copy");
  const std::string path = dir.path("mlp.pt");
  mlp_copy(zoo.mlp()).save(path);
  const model::NetworkConfig copy =
      archive_config(path, {"float32[B," + std::to_string(zoo.mlp().input) + "]"}, "--input", std::nullopt);
  const auto keep = executor::testing::planned(zoo, "keep");
  const auto copy_keep = executor::testing::planned(copy, "keep");
  const Batch batch = make_synthetic_data(zoo, torch::kCPU, 0)->next(32);
  Batch copy_batch;
  copy_batch.arguments = {batch.input};
  copy_batch.input = batch.input;
  copy_batch.target = batch.target;

  // Keep: the layers' inputs alike; the copy's loss holds its labels (int64)
  // beside the log-probabilities where the zoo's holds probabilities.
  const auto kept = stored_bytes(*keep.network, batch), copy_kept = stored_bytes(*copy_keep.network, copy_batch);
  const int64_t labels = batch.target.numel() * 8 + 4;  // and nll_loss's total weight, a float
  EXPECT_EQ(copy_kept.at("keep"), kept.at("keep") + labels);

  for (const std::string name : {"quantize-8", "quantize-4"}) {
    // The zoo's plan by name, its tensors named as the copy names them (the
    // loss's left as each network keeps it).
    const model::Plan plan = model::expand_plan_name(name, keep.layout);
    model::Plan copied;
    copied.name = name;
    for (const auto& [key, strategy] : plan.tensors) {
      if (key.rfind("loss:", 0) != 0) copied.tensors[copy_path(key)] = strategy;
    }
    ASSERT_EQ(copied.tensors.size(), 5u) << "three linears' inputs, two activations' inputs";
    const auto zoo_bytes = stored_bytes(*executor::testing::planned(zoo, plan).network, batch);
    const auto copy_bytes = stored_bytes(*executor::testing::planned(copy, copied).network, copy_batch);
    EXPECT_EQ(copy_bytes.at(name), zoo_bytes.at(name)) << name;
  }
}

}  // namespace
}  // namespace papaya::executor::torchscript
