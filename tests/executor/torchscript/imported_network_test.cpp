#include "executor/torchscript/imported_network.h"

#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>

#include <cstdio>
#include <limits>
#include <set>

#include "executor/data.h"
#include "executor/distributed/data_parallel.h"
#include "executor/layout_probe.h"
#include "executor/networks/source_for.h"
#include "executor/torchscript/archive.h"
#include "model/error.h"
#include "model/plan.h"
#include "tests/executor/moms_fixture.h"
#include "tests/executor/torchscript/fixtures.h"

namespace papaya::executor::torchscript {
namespace {

// The archive of testing::small_cnn(), removed when the test ends.
struct CnnArchive {
  CnnArchive() : path(testing::saved(testing::small_cnn(), "cnn")) {}
  ~CnnArchive() { std::remove(path.c_str()); }
  model::NetworkConfig config() const { return archive_config(path, {"float32[B,3,8,8]"}, "--input", std::nullopt); }
  std::string path;
};

std::vector<std::string> paths(const Network& network) {
  std::vector<std::string> out;
  for (const auto* layer : network.layers()) out.push_back(layer->path());
  return out;
}

TEST(ImportedNetwork, LayersAreTheLeafModulesCallsInTheOrderTheyRun) {
  const CnnArchive archive;
  const model::NetworkConfig config = archive.config();
  EXPECT_EQ(config.family, model::Family::torchscript);
  EXPECT_EQ(config.name, std::filesystem::path(archive.path).stem().string());  // the file's name
  const auto network = source_for(config)->build();
  const auto& imported = dynamic_cast<const ImportedNetwork&>(*network);
  EXPECT_EQ(imported.loss_kind(), LossKind::cross_entropy);  // [B, 10] logits
  const std::vector<std::string> expected = {"stem",
                                             "layers.b0.conv1",
                                             "layers.b0.relu",
                                             "layers.b0.conv2",
                                             "layers.b0.relu#2",
                                             "layers.b1.conv1",
                                             "layers.b1.relu",
                                             "layers.b1.conv2",
                                             "layers.b1.relu#2",
                                             "head"};
  EXPECT_EQ(paths(*network), expected);
  // A convolution saves its input (its weight is a parameter), ReLU its
  // output, the head what it averages (LibTorch 1.13's mean keeps it) and
  // the mean it multiplies.
  for (const auto* layer : network->layers()) {
    ASSERT_GE(layer->slots().size(), 1u) << layer->path();
    const bool relu = layer->path().find("relu") != std::string::npos;
    EXPECT_EQ(layer->slots()[0].name, relu ? "output" : "input") << layer->path();
    EXPECT_EQ(layer->slots()[0].kind, model::SlotKind::activation);
    EXPECT_EQ(layer->kind(), model::LayerKind::module);
  }
  const auto& head_slots = network->find_layer("head")->slots();
  EXPECT_EQ(head_slots.back().name, "t" + std::to_string(head_slots.size() - 1));
  // Parameters: with the layer whose module holds them, counted once.
  EXPECT_EQ(network->parameter_count(), config.torchscript().parameters);
  EXPECT_EQ(network->find_layer("layers.b0.conv1")->parameters(false).size(), 2u);
  EXPECT_EQ(network->find_layer("layers.b0.relu#2")->parameters(false).size(), 0u);

  // The layout: conv2 saves the storage relu saved (its output), as the
  // zoo's layers share theirs.
  const model::NetworkLayout layout = probe_layout(*network);
  EXPECT_EQ(layout.find_layer("layers.b0.conv2")->slots[0].storage, "layers.b0.relu:output");
  EXPECT_EQ(layout.find_layer("layers.b0.relu")->output_saved_by, std::vector<std::string>{"layers.b0.conv2:input"});
  const model::LayoutLayer& head = *layout.find_layer("head");
  ASSERT_GE(head.slots.size(), 1u);
  EXPECT_EQ(head.slots.back().storage, "head:" + head.slots.back().name);  // the mean: its own
}

// Counts what the layers report.
struct Counter : LayerObserver {
  void forward_begin(const Layer&, std::vector<torch::Tensor*>&) override { ++calls; }
  void saved(const Layer&, const Slot&, const torch::Tensor&) override { ++saved_tensors; }
  void forward_end(const Layer&, torch::Tensor&) override {}
  int calls = 0, saved_tensors = 0;
};

// The network's loss and gradients are the archive's own: the markers and
// the hooks change nothing. And they keep working past the first steps,
// where the graph executor's optimizer (were it on) would fuse the calls
// into one differentiable graph and no tensor would be charged to a layer.
TEST(ImportedNetwork, GradientsAreThoseOfTheArchiveRunAsItIs) {
  const CnnArchive archive;
  const auto network = source_for(archive.config())->build();
  torch::jit::Module plain = load_archive(archive.path).module;

  const Batch batch = make_synthetic_data(network->config(), torch::kCPU, 3)->next(4);
  ASSERT_EQ(batch.arguments.size(), 1u);
  const at::Generator labels = at::detail::createCPUGenerator(kLabelSeed);  // as the network's loss draws them
  int slots = 0;
  for (const auto* layer : network->layers()) slots += static_cast<int>(layer->slots().size());
  for (int step = 0; step < 4; ++step) {  // the graph executor changes its graph after the first runs
    for (auto& p : network->parameters()) p.mutable_grad() = torch::Tensor();
    for (auto p : plain.parameters()) p.mutable_grad() = torch::Tensor();
    Counter counter;
    {
      ObserverGuard guard(&counter);
      network->loss(batch).backward();
    }
    EXPECT_EQ(counter.calls, static_cast<int>(network->layers().size())) << "step " << step;
    EXPECT_EQ(counter.saved_tensors, slots) << "step " << step;
    torch::jit::IValue out = plain.forward({batch.input});
    loss_of(out, LossKind::cross_entropy, labels, {}, {}, "").backward();
    // Same parameters (the network's are the archive's tensors), same gradients.
    std::vector<torch::Tensor> ours, theirs;
    for (const auto& p : network->parameters()) ours.push_back(p.grad());
    for (const auto& p : plain.parameters()) theirs.push_back(p.grad());
    ASSERT_EQ(ours.size(), theirs.size());
    for (size_t i = 0; i < ours.size(); ++i)
      EXPECT_TRUE(torch::equal(ours[i], theirs[i])) << "step " << step << ", parameter " << i;
  }
}

// The parameters' gradients after one step; `saved`: the tensors the
// layers saved in forward.
std::vector<torch::Tensor> gradients(Network& network, const Batch& batch, int& saved) {
  for (auto& p : network.parameters()) p.mutable_grad() = torch::Tensor();
  Counter counter;
  torch::Tensor loss;
  {
    ObserverGuard guard(&counter);
    loss = network.loss(batch);
  }
  saved = counter.saved_tensors;
  loss.backward();
  std::vector<torch::Tensor> out;
  for (const auto& p : network.parameters()) out.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
  return out;
}

// The Sequential's blocks are segments; recomputing them gives keep's
// gradients bit for bit, in place or not. (Two networks from one archive:
// each draws the same labels for its first loss.)
TEST(ImportedNetwork, ASequentialsBlocksAreSegmentsThatRecomputeExactly) {
  for (const bool in_place : {false, true}) {
    const std::string path = testing::saved(testing::small_cnn(in_place), "segments");
    const model::NetworkConfig config = archive_config(path, {"float32[B,3,8,8]"}, "--input", std::nullopt);
    const auto kept = source_for(config)->build();
    const auto recomputed = source_for(config)->build();
    std::remove(path.c_str());
    ASSERT_EQ(kept->segments().size(), 2u);
    EXPECT_EQ(kept->segments()[0]->path(), "layers.b0");
    EXPECT_EQ(kept->find_layer("layers.b1.relu#2")->segment(), "layers.b1");
    EXPECT_EQ(kept->find_layer("stem")->segment(), "");
    EXPECT_FALSE(kept->segments()[0]->draws_random());  // no dropout in it

    for (auto* segment : recomputed->segments()) segment->set_strategy({true, {}});
    const Batch batch = make_synthetic_data(config, torch::kCPU, 5)->next(3);
    int saved_keep = 0, saved_recompute = 0;
    const std::vector<torch::Tensor> keep = gradients(*kept, batch, saved_keep);
    const std::vector<torch::Tensor> recompute = gradients(*recomputed, batch, saved_recompute);
    EXPECT_EQ(saved_recompute, saved_keep - 8) << "the blocks' layers save nothing in forward";
    ASSERT_EQ(keep.size(), recompute.size());
    for (size_t i = 0; i < keep.size(); ++i) {
      EXPECT_TRUE(torch::equal(keep[i], recompute[i])) << "in place " << in_place << ", parameter " << i;
    }
  }
}

// Segments do not nest: the children of a Sequential inside a segment run
// as part of it.
TEST(ImportedNetwork, ASegmentInsideASegmentIsNone) {
  const auto inner = [] {
    torch::jit::Module conv("Conv");
    conv.register_parameter("weight", (0.3 * torch::randn({3, 3, 3, 3})).requires_grad_(), false);
    conv.define("def forward(self, x):\n  return torch.conv2d(x, self.weight, None, [1, 1], [1, 1])\n");
    torch::jit::Module m("Inner");
    m.register_module("conv", conv);
    m.define("def forward(self, x):\n  return torch.relu(self.conv.forward(x))\n");
    return m;
  };
  const torch::jit::Module body = testing::sequential(inner(), inner(), "c0", "c1");
  torch::jit::Module block("Block");
  block.register_module("body", body);
  block.define("def forward(self, x):\n  return self.body.forward(x) + x\n");
  torch::jit::Module features("Sequential");
  features.register_module("b0", block);
  features.define("def forward(self, x):\n  return self.b0.forward(x)\n");
  torch::jit::Module top("Net");
  top.register_module("features", features);
  top.define("def forward(self, x):\n  return self.features.forward(x).sum()\n");
  const std::string path = testing::saved(top, "nested");
  const model::NetworkConfig config = archive_config(path, {"float32[B,3,4,4]"}, "--input", std::nullopt);
  const auto network = source_for(config)->build();
  const auto recomputed = source_for(config)->build();
  std::remove(path.c_str());
  ASSERT_EQ(network->segments().size(), 1u);
  EXPECT_EQ(network->segments()[0]->path(), "features.b0");
  EXPECT_EQ(network->find_layer("features.b0.body.c1.conv")->segment(), "features.b0");
  EXPECT_EQ(dynamic_cast<const ImportedNetwork&>(*network).loss_kind(), LossKind::output);

  // Recomputed, the first block (whose input, the batch, needs no gradient)
  // still differentiates its weights.
  recomputed->segments()[0]->set_strategy({true, {}});
  const Batch batch = make_synthetic_data(config, torch::kCPU, 2)->next(2);
  int saved = 0;
  const std::vector<torch::Tensor> keep = gradients(*network, batch, saved), recompute = gradients(*recomputed, batch, saved);
  ASSERT_EQ(keep.size(), recompute.size());
  for (size_t i = 0; i < keep.size(); ++i) {
    ASSERT_TRUE(recompute[i].defined()) << "parameter " << i;
    EXPECT_TRUE(torch::equal(keep[i], recompute[i])) << "parameter " << i;
  }
}

// The code between layers saves for its backward too (SqueezeExcitation's
// scale * input): charged to the layer before it, so that a plan can store
// it and the model counts it.
TEST(ImportedNetwork, WhatTheCodeBetweenLayersSavesIsTheLayerBefores) {
  torch::jit::Module top("Net");
  top.register_module("a", testing::linear("Linear", 3, 3, true));
  top.define("def forward(self, x):\n  y = self.a.forward(x)\n  return (y * torch.tanh(y)).sum()\n");
  const std::string path = testing::saved(top, "between");
  const auto network = source_for(archive_config(path, {"float32[B,3]"}, "--input", std::nullopt))->build();
  std::remove(path.c_str());
  // Its own input and output; then tanh's output, and y and tanh(y) for the product.
  std::vector<std::string> names;
  for (const auto& slot : network->find_layer("a")->slots()) names.push_back(slot.name);
  EXPECT_EQ(names, (std::vector<std::string>{"input", "output", "t2", "t3", "t4"}));
  const model::NetworkLayout layout = probe_layout(*network);
  EXPECT_EQ(layout.find_layer("a")->slots[3].storage, "a:output");  // y, saved again by the product
}

// A data-parallel rank's slice holds its rows of every forward argument.
TEST(ImportedNetwork, ARanksSliceHoldsItsRowsOfEveryArgument) {
  const CnnArchive archive;
  const model::NetworkConfig config = archive.config();
  const Batch global = make_synthetic_data(config, torch::kCPU, 0)->next(4);
  World world;
  world.rank = 1;
  world.size = 2;
  const Batch slice = rank_slice(make_synthetic_data(config, torch::kCPU, 0), world)->next(2);
  ASSERT_EQ(slice.arguments.size(), 1u);
  EXPECT_TRUE(torch::equal(slice.arguments[0], global.arguments[0].narrow(0, 2, 2)));
  EXPECT_TRUE(slice.input.is_same(slice.arguments[0]));  // one copy
  EXPECT_FALSE(slice.target.defined());
  EXPECT_EQ(slice.rows.first, 2);
  EXPECT_EQ(slice.rows.of, 4);
  // The labels each rank's network draws are its rows of the whole batch's:
  // the ranks' losses average to the one process's (networks built alike
  // draw alike for their first loss).
  const auto loss = [&](const Batch& batch) {
    torch::NoGradGuard probe;  // a probe's forward: the network puts its state back
    return source_for(config)->build()->loss(batch).item<double>();
  };
  world.rank = 0;
  const Batch first = rank_slice(make_synthetic_data(config, torch::kCPU, 0), world)->next(2);
  const double whole = loss(global);
  EXPECT_NEAR((loss(first) + loss(slice)) / 2, whole, 16 * std::numeric_limits<float>::epsilon() * std::abs(whole));
}

// A leaf returning a tuple led by a tensor (as nn.MultiheadAttention returns
// its output and optional weights) is a layer whose output is that tensor;
// the gradients stay the archive's.
TEST(ImportedNetwork, AModuleReturningATupleIsALayerOfItsFirstTensor) {
  torch::jit::Module attention("Attention");
  attention.register_parameter("weight", (0.3 * torch::randn({3, 3})).requires_grad_(), false);
  attention.define(R"(def forward(self, x):
  weights : Optional[Tensor] = None
  return torch.tanh(x.mm(self.weight)), weights
)");
  torch::jit::Module top("Net");
  top.register_module("att", attention);
  top.register_module("head", testing::linear("Linear", 3, 3, true));
  top.define(R"(def forward(self, x):
  y, w = self.att.forward(x)
  return self.head.forward(y).sum()
)");
  const std::string path = testing::saved(top, "tuple");
  const auto network = source_for(archive_config(path, {"float32[B,3]"}, "--input", std::nullopt))->build();
  torch::jit::Module plain = load_archive(path).module;
  std::remove(path.c_str());
  EXPECT_EQ(paths(*network), (std::vector<std::string>{"att", "head"}));
  const Batch batch = make_synthetic_data(network->config(), torch::kCPU, 1)->next(4);
  int saved = 0;
  const std::vector<torch::Tensor> ours = gradients(*network, batch, saved);
  EXPECT_EQ(saved, 4) << "its input and tanh's output, the head's input and ReLU's output";
  plain.forward({batch.input}).toTensor().backward();
  size_t i = 0;
  for (const auto& p : plain.parameters()) EXPECT_TRUE(torch::equal(ours.at(i++), p.grad())) << "parameter " << i;
}

// A tensor an op saves holding an infinity (here minimum's other operand,
// +inf where the input is not capped; a GPU attention kernel's padded
// log-sum-exp) is kept as it is under quantization: a range codec would
// turn the whole group into NaN, and with it every gradient.
TEST(ImportedNetwork, ATensorHoldingAnInfinityIsKeptAsItIs) {
  torch::jit::Module cap("Cap");
  cap.define(R"(def forward(self, x):
  limit = torch.where(x > 1.0, torch.full_like(x, 0.5), torch.full_like(x, float("inf")))
  return torch.minimum(x, limit)
)");
  torch::jit::Module top("Net");
  top.register_module("lin", testing::linear("Linear", 4, 6, true));
  top.register_module("cap", cap);
  top.define("def forward(self, x):\n  return self.cap.forward(self.lin.forward(x))\n");
  const std::string path = testing::saved(top, "infinity");
  const model::NetworkConfig config = archive_config(path, {"float32[B,4]"}, "--input", std::nullopt);
  const auto keep = executor::testing::planned(config, "keep");
  const auto quantized = executor::testing::planned(config, "quantize-4");
  std::remove(path.c_str());
  int stats = 0;
  for (const auto& slot : quantized.network->find_layer("cap")->slots()) {
    if (slot.name == "input") {
      EXPECT_EQ(slot.kind, model::SlotKind::activation);
    }
    stats += slot.kind == model::SlotKind::stats;
  }
  EXPECT_EQ(stats, 1) << "the limit, and nothing else";

  const Batch batch = make_synthetic_data(config, torch::kCPU, 2)->next(16);
  const auto exact = executor::testing::step(*keep.network, batch);
  const auto approx = executor::testing::step(*quantized.network, batch);
  for (const auto& [name, grad] : approx.grads) EXPECT_TRUE(torch::isfinite(grad).all().item<bool>()) << name;
  EXPECT_LT(executor::testing::relative_error(approx, exact), 1.0);
}

// The gradients of the first step of `network` (one that has taken none:
// its loss draws labels as the archive's below) against the archive's own forward
// and backward on the same batch, each parameter to the bit.
void expect_the_archives_gradients(Network& network, const std::string& path, const Batch& batch) {
  const LossKind kind = dynamic_cast<const ImportedNetwork&>(network).loss_kind();
  torch::jit::Module plain = load_archive(path).module;
  int saved = 0;
  const std::vector<torch::Tensor> ours = gradients(network, batch, saved);
  const at::Generator labels = at::detail::createCPUGenerator(kLabelSeed);  // as the network's loss draws them
  const std::vector<torch::jit::IValue> arguments(batch.arguments.begin(), batch.arguments.end());
  loss_of(plain.forward(arguments), kind, labels, batch.target, batch.rows, "").backward();
  std::vector<torch::Tensor> theirs;
  std::set<const void*> seen;  // a tied weight is an attribute of two modules, one parameter
  for (const auto& p : plain.parameters()) {
    if (seen.insert(p.unsafeGetTensorImpl()).second) theirs.push_back(p.grad());
  }
  ASSERT_EQ(ours.size(), theirs.size());
  for (size_t i = 0; i < ours.size(); ++i) EXPECT_TRUE(torch::equal(ours[i], theirs[i])) << "parameter " << i;
}

// A module called more than once in one forward is a layer a call: from
// two sites (one encoder applied to two inputs, a siamese pair), and in a
// loop; its parameters are one set, whose gradients sum over the calls as
// the archive's own backward sums them.
TEST(ImportedNetwork, EveryCallOfAModuleIsALayer) {
  torch::jit::Module encoder("Encoder");
  encoder.register_module("fc", testing::linear("Linear", 3, 4, true));
  encoder.register_module("out", testing::linear("Linear", 4, 4, true));
  encoder.define("def forward(self, x):\n  return self.out.forward(self.fc.forward(x))\n");
  torch::jit::Module top("Siamese");
  top.register_module("enc", encoder);
  top.register_module("step", testing::linear("Linear", 4, 4, true));
  top.define(R"(def forward(self, x):
  h = self.enc.forward(x) - self.enc.forward(x * 0.5)
  for i in range(3):
    h = self.step.forward(h)
  return h
)");
  const std::string path = testing::saved(top, "calls");
  const model::NetworkConfig config = archive_config(path, {"float32[B,3]"}, "--input", std::nullopt);
  const auto network = source_for(config)->build();
  EXPECT_EQ(paths(*network),
            (std::vector<std::string>{"enc.fc", "enc.out", "enc.fc#2", "enc.out#2", "step", "step#2", "step#3"}));
  EXPECT_EQ(network->parameter_count(), config.torchscript().parameters);    // one set
  EXPECT_EQ(network->find_layer("enc.fc#2")->parameters(false).size(), 0u);  // the first call's layer holds them
  // Each call saves what it saves, its own tensors: step's three inputs, three slots.
  const model::NetworkLayout layout = probe_layout(*network);
  EXPECT_NE(layout.find_layer("step#2")->slots.front().storage, layout.find_layer("step#3")->slots.front().storage);
  // A plan names one call, or every call of a module.
  const model::Plan one = model::parse_plan(nlohmann::json::parse(R"({"papaya_plan": 1, "tensors": {"step#2": "quantize-8"}})"),
                                            layout, config.name, "plan.json");
  for (const auto& [key, strategy] : one.tensors) EXPECT_EQ(key.rfind("step#2:", 0), 0u) << key;
  EXPECT_TRUE(one.tensors.count("step#2:input"));
  const model::Plan all = model::parse_plan(nlohmann::json::parse(R"({"papaya_plan": 1, "tensors": {"step": "quantize-8"}})"),
                                            layout, config.name, "plan.json");
  for (const char* input : {"step:input", "step#2:input", "step#3:input"}) EXPECT_TRUE(all.tensors.count(input)) << input;
  expect_the_archives_gradients(*network, path, make_synthetic_data(config, torch::kCPU, 1)->next(4));
  std::remove(path.c_str());
}

// A container's child called in a loop (ALBERT's one block applied N times)
// is a segment a call, its layers named from the call; recomputing them
// gives keep's gradients, which are the archive's own.
TEST(ImportedNetwork, AContainersChildCalledInALoopIsASegmentACall) {
  torch::jit::Module block("Block");
  block.register_module("fc", testing::linear("Linear", 4, 4, true));
  block.define("def forward(self, x):\n  return self.fc.forward(x) + x\n");
  torch::jit::Module list("Sequential");
  list.register_module("b0", block);
  list.define("def forward(self, x):\n  return self.b0.forward(x)\n");
  torch::jit::Module top("Shared");
  top.register_module("layers", list);
  top.register_module("head", testing::linear("Linear", 4, 3, true));
  top.define(R"(def forward(self, x):
  for i in range(3):
    x = self.layers.b0.forward(x)
  return self.head.forward(x)
)");
  const std::string path = testing::saved(top, "shared-block");
  const model::NetworkConfig config = archive_config(path, {"float32[B,4]"}, "--input", std::nullopt);
  const auto kept = source_for(config)->build();
  const auto recomputed = source_for(config)->build();
  EXPECT_EQ(paths(*kept), (std::vector<std::string>{"layers.b0.fc", "layers.b0#2.fc", "layers.b0#3.fc", "head"}));
  std::vector<std::string> segments;
  for (const auto* segment : kept->segments()) segments.push_back(segment->path());
  EXPECT_EQ(segments, (std::vector<std::string>{"layers.b0", "layers.b0#2", "layers.b0#3"}));
  EXPECT_EQ(kept->find_layer("layers.b0#2.fc")->segment(), "layers.b0#2");
  for (auto* segment : recomputed->segments()) segment->set_strategy({true, {}});
  const Batch batch = make_synthetic_data(config, torch::kCPU, 5)->next(3);
  int saved_keep = 0, saved_recompute = 0;
  const std::vector<torch::Tensor> keep = gradients(*kept, batch, saved_keep);
  const std::vector<torch::Tensor> recompute = gradients(*recomputed, batch, saved_recompute);
  EXPECT_LT(saved_recompute, saved_keep);
  ASSERT_EQ(keep.size(), recompute.size());
  for (size_t i = 0; i < keep.size(); ++i) EXPECT_TRUE(torch::equal(keep[i], recompute[i])) << "parameter " << i;
  expect_the_archives_gradients(*source_for(config)->build(), path, batch);  // a fresh one: its first step's labels
  std::remove(path.c_str());
}

// Data flow through chunk and concatenation between modules (ShuffleNetV2's
// blocks: half the channels through a branch, the other half as they are):
// a block whose first layer takes a part of its input is no segment (it
// would recompute from that part), and the network computes what the
// archive computes.
TEST(ImportedNetwork, ChunkAndCatBetweenModulesRunAsTheArchive) {
  const auto block = [] {
    torch::jit::Module m("Split");
    m.register_module("branch", testing::linear("Linear", 2, 2, true));
    m.define(R"(def forward(self, x):
  x1, x2 = x.chunk(2, 1)
  return torch.cat([x1, self.branch.forward(x2)], 1)
)");
    return m;
  };
  torch::jit::Module top("Shuffle");
  top.register_module("stage", testing::sequential(block(), block()));
  top.register_module("head", testing::linear("Linear", 4, 3, true));
  top.define("def forward(self, x):\n  return self.head.forward(self.stage.forward(x))\n");
  const std::string path = testing::saved(top, "chunk");
  const model::NetworkConfig config = archive_config(path, {"float32[B,4]"}, "--input", std::nullopt);
  const auto network = source_for(config)->build();
  EXPECT_EQ(paths(*network), (std::vector<std::string>{"stage.b0.branch", "stage.b1.branch", "head"}));
  EXPECT_TRUE(network->segments().empty());
  expect_the_archives_gradients(*network, path, make_synthetic_data(config, torch::kCPU, 2)->next(4));
  std::remove(path.c_str());
}

// A recurrent op (aten::lstm) in a module of its own is one layer, whatever
// it saves, called as scripted nn.LSTM is: through forward__0, an overload
// of its forward; its gradients are the archive's.
TEST(ImportedNetwork, AnLstmIsOneLayer) {
  const torch::jit::Module lstm = testing::lstm(3, 4, "forward__0");
  torch::jit::Module head("Head");
  head.register_parameter("weight", (0.3 * torch::randn({4, 3})).requires_grad_(), false);
  head.define("def forward(self, x):\n  return x.select(1, -1).mm(self.weight)\n");
  torch::jit::Module top("Lm");
  top.register_module("rnn", lstm);
  top.register_module("head", head);
  top.define("def forward(self, x):\n  return self.head.forward(self.rnn.forward__0(x))\n");
  const std::string path = testing::saved(top, "lstm");
  const model::NetworkConfig config = archive_config(path, {"float32[B,5,3]"}, "--input", std::nullopt);
  const auto network = source_for(config)->build();
  EXPECT_EQ(paths(*network), (std::vector<std::string>{"rnn", "head"}));
  const model::NetworkLayout layout = probe_layout(*network);
  EXPECT_FALSE(layout.find_layer("rnn")->slots.empty());
  expect_the_archives_gradients(*network, path, make_synthetic_data(config, torch::kCPU, 3)->next(4));
  std::remove(path.c_str());
}

// Tied input and output embeddings (nanoGPT's lm_head.weight = wte.weight):
// one tensor, an attribute of two modules, is one parameter, counted once,
// its gradient the sum of both uses as the archive's own backward sums it.
TEST(ImportedNetwork, TiedEmbeddingsAreOneParameter) {
  const torch::Tensor table = (0.3 * torch::randn({16, 8})).requires_grad_();
  torch::jit::Module embedding("Embedding");
  embedding.register_parameter("weight", table, false);
  embedding.define("def forward(self, ids):\n  return torch.embedding(self.weight, ids)\n");
  torch::jit::Module head("Head");
  head.register_parameter("weight", table, false);
  head.define("def forward(self, x):\n  return x.matmul(self.weight.t())\n");
  torch::jit::Module top("TiedLm");
  top.register_module("wte", embedding);
  top.register_module("mix", testing::linear("Linear", 8, 8, true));
  top.register_module("lm_head", head);
  top.define(R"(def forward(self, ids):
  x = self.wte.forward(ids)
  return self.lm_head.forward(self.mix.forward(x.flatten(0, 1)).view(x.size()))
)");
  const std::string path = testing::saved(top, "tied");
  const model::NetworkConfig config = archive_config(path, {"int64[B,6]<16"}, "--input", std::nullopt);
  const auto network = source_for(config)->build();
  EXPECT_EQ(network->parameter_count(), 16 * 8 + 8 * 8 + 8);
  EXPECT_EQ(config.torchscript().parameters, network->parameter_count());
  expect_the_archives_gradients(*network, path, make_synthetic_data(config, torch::kCPU, 4)->next(3));
  std::remove(path.c_str());
}

// Labels are drawn apart from the inputs: token ids drawn from the data's
// stream in the inputs' shape and bound were the labels too, and a network
// that echoes its input (as tied embeddings do at the start) had a loss of
// zero to learn from.
TEST(ImportedNetwork, DrawnLabelsAreNotTheInputs) {
  torch::jit::Module echo("Echo");
  echo.register_buffer("table", 100.0 * torch::eye(16));
  echo.register_parameter("bias", torch::zeros({16}).requires_grad_(), false);
  echo.define("def forward(self, ids):\n  return torch.embedding(self.table, ids) + self.bias\n");
  torch::jit::Module top("EchoLm");
  top.register_module("echo", echo);
  top.define("def forward(self, ids):\n  return self.echo.forward(ids)\n");
  const std::string path = testing::saved(top, "echo");
  const model::NetworkConfig config = archive_config(path, {"int64[B,32]<16"}, "--input", std::nullopt);
  const auto network = source_for(config)->build();
  std::remove(path.c_str());
  // With labels drawn at random, 15 in 16 miss the echoed id by a logit of 100.
  EXPECT_GT(network->loss(make_synthetic_data(config, torch::kCPU, 0)->next(4)).item<double>(), 10.0);
}

}  // namespace
}  // namespace papaya::executor::torchscript
