// A TorchScript archive through the commands, end to end: recommend profiles
// it, fits and plans; train trains with the plan; the peak it measures is the
// one the plan predicted.
#include <gtest/gtest.h>

#include <torch/serialize.h>
#include <filesystem>
#include <fstream>
#include <map>
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
  const Outcome recommend =
      run_papaya("recommend --network " + cnn + input + " --budget " + budget + " --out " + plan + " --json");
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

// A tensor without the batch (nanoGPT's positions from torch.arange) as a
// layer's input: the probe at a larger batch passes it as it is, and the
// layer's bytes are the part of the model that does not grow with the batch.
TEST(ArchiveCommands, ATensorWithoutTheBatchIsProfiledAsOneForTheWholeBatch) {
  TempDir dir("papaya-archive-positions");
  const std::string net = dir.path("nanogpt.pt"), out = dir.path("p.json");
  executor::torchscript::testing::positions_from_arange().save(net);
  const Outcome run = run_papaya("profile --network " + net + " --input 'int64[B,8]<16' --batch 1,2 --steps 2 --warmup 1 " +
                                 "--probe-batch 8 --out " + out);
  ASSERT_EQ(run.code, 0) << run.err;
  nlohmann::json profile;
  std::ifstream(out) >> profile;
  bool found = false;
  for (const auto& layer : profile.at("layers")) {
    if (layer["path"] != "pos") continue;
    found = true;
    for (const auto& slot : layer["saved"]) EXPECT_FALSE(slot["per_sample"].get<bool>()) << slot.dump();  // the positions, once
  }
  EXPECT_TRUE(found);
  const Outcome fitted = run_papaya("fit " + out + " --out " + dir.path("m.json"));
  ASSERT_EQ(fitted.code, 0) << fitted.err;
}

// The probe grows the inputs of the largest profiled batch to the probe
// batch. Positions [2] at a largest profiled batch of 2 look like a batch
// of 2 by their size alone; they are the same positions at 3, and the probe
// of their lookup holds the same bytes either way.
TEST(ArchiveCommands, ATensorWithoutTheBatchIsNotGrownWhereItsSizeIsTheBatchs) {
  TempDir dir("papaya-archive-positions");
  const std::string net = dir.path("nanogpt.pt");
  executor::torchscript::testing::positions_from_arange().save(net);
  std::vector<double> headroom;
  for (const char* batches : {"1,2", "1,3"}) {
    const std::string out = dir.path(std::string("p") + batches + ".json");
    const Outcome run = run_papaya("profile --network " + net + " --input 'int64[B,2]<16' --batch " + batches +
                                   " --steps 2 --warmup 1 --probe-batch 8 --out " + out);
    ASSERT_EQ(run.code, 0) << run.err;
    nlohmann::json profile;
    std::ifstream(out) >> profile;
    for (const auto& layer : profile.at("layers")) {
      if (layer["path"] == "pos") headroom.push_back(layer.at("probe").at("forward_headroom_bytes"));
    }
  }
  ASSERT_EQ(headroom.size(), 2u);
  EXPECT_EQ(headroom[0], headroom[1]);
}

// The profile of `network` (saved in `dir`), taking `input`, at batches 1
// and 2 with the probe at 8; empty where papaya failed (a test failure).
nlohmann::json probed_profile(const torch::jit::Module& network, const std::string& input, const TempDir& dir) {
  const std::string path = dir.path("network.pt"), out = dir.path("p.json");
  network.save(path);
  const Outcome run = run_papaya("profile --network " + path + " --input '" + input +
                                 "' --batch 1,2 --steps 2 --warmup 1 --probe-batch 8 --out " + out);
  EXPECT_EQ(run.code, 0) << run.err;
  nlohmann::json profile;
  if (run.code == 0) std::ifstream(out) >> profile;
  return profile;
}

// The headroom of each of `layer`'s rungs at a profiled batch of `profile`
// equals the step's there, byte for byte: the probe ran what the step ran.
void expect_rungs_at_profiled_batches_as_in_the_step(const nlohmann::json& profile, const nlohmann::json& layer) {
  ASSERT_TRUE(layer.contains("probe")) << layer.at("path");
  const nlohmann::json& rungs = layer.at("probe").at("rungs");
  ASSERT_GE(rungs.size(), 2u);
  for (size_t k : {size_t{0}, size_t{1}}) {
    const nlohmann::json& step = layer.at("measured").at(k);
    EXPECT_EQ(rungs[k].at("batch"), profile.at("batches").at(k));
    EXPECT_EQ(rungs[k].at("forward_headroom_bytes").get<int64_t>(),
              step.at("forward_peak_bytes").get<int64_t>() - step.at("forward_start_bytes").get<int64_t>())
        << layer.at("path") << " at batch " << rungs[k].at("batch");
    EXPECT_EQ(rungs[k].at("backward_headroom_bytes").get<int64_t>(),
              step.at("backward_peak_bytes").get<int64_t>() - step.at("backward_start_bytes").get<int64_t>())
        << layer.at("path") << " at batch " << rungs[k].at("batch");
  }
}

// As nn.MultiheadAttention: a module whose forward takes another path with
// `need_weights` (the default, True: more scratch and more saved tensors),
// and another again where its two inputs are not one tensor (`query is key`).
torch::jit::Module attention_like() {
  torch::jit::Module attention("Attention");
  attention.define(R"(def forward(self, q, k, need_weights: bool = True):
  if need_weights:
    return q * k.sum(1, True) * q.exp()
  if q is k:
    return torch.relu(q)
  return q * k.exp()
)");
  return attention;
}

// A module the network calls with constants besides its tensors
// (MultiheadAttention's need_weights=False, on one tensor as query and key)
// is probed called with them, on one tensor: its rungs are the step's.
TEST(ArchiveCommands, AModuleCalledWithConstantArgumentsIsProbedWithThem) {
  TempDir dir("papaya-archive-arguments");
  torch::jit::Module top("Net");
  top.register_module("fc", executor::torchscript::testing::linear("Linear", 3, 4, true));
  top.register_module("attention", attention_like());
  top.define("def forward(self, x):\n  h = self.fc.forward(x)\n  return self.attention.forward(h, h, False)\n");
  const nlohmann::json profile = probed_profile(top, "float32[B,3]", dir);
  ASSERT_FALSE(profile.empty());
  const nlohmann::json& attention = profile.at("layers").at(1);
  ASSERT_EQ(attention.at("path"), "attention");
  expect_rungs_at_profiled_batches_as_in_the_step(profile, attention);
}

// Called with a value computed at run time, or with other constants from
// another call, a module run alone would compute something else: it is
// not probed alone.
TEST(ArchiveCommands, AModuleCalledWithOtherThanOneSetOfConstantsIsNotProbedAlone) {
  TempDir dir("papaya-archive-run-time-arguments");
  for (const std::string forward :
       {"def forward(self, x):\n  h = self.fc.forward(x)\n  return self.attention.forward(h, h, h.size(0) > 1000)\n",
        "def forward(self, x):\n  h = self.fc.forward(x)\n  return self.attention.forward(self.attention.forward(h, h, False), "
        "h, True)\n"}) {
    torch::jit::Module top("Net");
    top.register_module("fc", executor::torchscript::testing::linear("Linear", 3, 4, true));
    top.register_module("attention", attention_like());
    top.define(forward);
    const nlohmann::json profile = probed_profile(top, "float32[B,3]", dir);
    ASSERT_FALSE(profile.empty()) << forward;
    std::map<std::string, bool> probed;
    for (const auto& layer : profile.at("layers")) probed[layer.at("path")] = layer.contains("probe");
    EXPECT_TRUE(probed.at("fc")) << forward;
    for (const auto& [path, was_probed] : probed) {
      if (path != "fc") EXPECT_FALSE(was_probed) << path << " in " << forward;
    }
  }
}

// A layer is probed on its input's layout in the step: here a permuted one
// (as ConvNeXt's LayerNorm takes its image with the channels last), which
// its layer norm copies before it normalizes, where a contiguous one would
// need no copy. So each rung at a profiled batch is the step's scratch
// there, byte for byte.
TEST(ArchiveCommands, ALayerIsProbedOnItsInputsLayoutInTheStep) {
  TempDir dir("papaya-archive-layout");
  torch::jit::Module norm("Norm");
  norm.register_parameter("weight", torch::rand({3}).add(0.5).requires_grad_(true), false);
  norm.define("def forward(self, x):\n  return torch.layer_norm(x, [3]) * self.weight\n");
  torch::jit::Module top("Net");
  top.register_module("norm", norm);
  top.register_module("head", executor::torchscript::testing::linear("Linear", 48, 10, true));
  top.define(
      "def forward(self, x):\n  y = self.norm.forward(x.permute(0, 2, 3, 1))\n  return self.head.forward(y.reshape(y.size(0), "
      "-1))\n");
  const nlohmann::json profile = probed_profile(top, "float32[B,3,4,4]", dir);
  const nlohmann::json& layer = profile.at("layers").at(0);
  ASSERT_EQ(layer.at("path"), "norm");
  expect_rungs_at_profiled_batches_as_in_the_step(profile, layer);
}

// The trained network back: --save-model writes the archive given with the
// trained parameters, which LibTorch loads as torch.jit.load does; a
// network that is no archive is refused before anything is written.
TEST(ArchiveCommands, SaveModelWritesTheArchiveTrained) {
  TempDir dir("papaya-archive-save-model");
  const std::string cnn = saved_cnn(dir), trained = dir.path("trained.pt");
  const Outcome run = run_papaya("train --network " + cnn + input + " --batch 2 --steps 2 --save-model " + trained + " --json");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(nlohmann::json::parse(run.out).at("saved_model"), trained);
  const torch::jit::Module given = torch::jit::load(cnn), back = torch::jit::load(trained);
  std::map<std::string, at::Tensor> before;
  for (const auto& p : given.named_parameters()) before.emplace(p.name, p.value);
  size_t moved = 0;
  for (const auto& p : back.named_parameters()) moved += !torch::equal(p.value, before.at(p.name));
  EXPECT_EQ(moved, before.size()) << "every parameter trained";

  const std::string zoo = dir.path("zoo.pt");
  const Outcome refused = run_papaya("train --network mlp-tiny --steps 1 --save-model " + zoo);
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find("only a TorchScript network is written back"), std::string::npos) << refused.err;
  EXPECT_FALSE(std::filesystem::exists(zoo));
}

// Under ZeRO-3 each of the two ranks holds a shard of the weights between
// steps: --save-model gathers them whole for rank 0 to write, and writes
// what ZeRO-2, which keeps every weight whole, writes after the same steps
// (the same arithmetic; the bound leaves a CPU room to order a sum
// otherwise: a thousandth of what the two steps moved each weight).
TEST(ArchiveCommands, SaveModelUnderZero3GathersTheWeightsWhole) {
  TempDir dir("papaya-archive-save-zero3");
  const std::string cnn = saved_cnn(dir);
  std::map<int, std::map<std::string, at::Tensor>> written;
  for (int zero : {2, 3}) {
    const std::string trained = dir.path("trained-zero" + std::to_string(zero) + ".pt");
    const Outcome run = run_papaya("train --network " + cnn + input + " --batch 2 --steps 2 --nproc 2 --timeout 60 --zero " +
                                   std::to_string(zero) + " --save-model " + trained + " --json");
    ASSERT_EQ(run.code, 0) << run.err;
    for (const auto& p : torch::jit::load(trained).named_parameters()) written[zero].emplace(p.name, p.value);
  }
  const torch::jit::Module given = torch::jit::load(cnn);
  ASSERT_EQ(written[3].size(), written[2].size());
  for (const auto& p : given.named_parameters()) {
    const double moved = (written[2].at(p.name) - p.value).abs().max().item<double>();
    EXPECT_GT(moved, 0) << p.name << " trained";
    EXPECT_LE((written[3].at(p.name) - written[2].at(p.name)).abs().max().item<double>(), 1e-3 * moved) << p.name;
  }
}

// Batches saved by torch.save (here torch::pickle_save): training reads them
// and takes the loss against their labels, so labels the head cannot produce
// are named.
TEST(ArchiveCommands, TrainsOnRecordedBatches) {
  TempDir dir("papaya-archive-data");
  const std::string cnn = saved_cnn(dir);
  const auto save = [&](const std::string& name, const at::Tensor& labels) {
    c10::impl::GenericList list(c10::AnyType::get());
    list.push_back(c10::ivalue::Tuple::create({torch::randn({3, 3, 8, 8}), labels}));
    const std::vector<char> bytes = torch::pickle_save(list);
    const std::string path = dir.path(name);
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
  };
  const Outcome train = run_papaya("train --network " + cnn + input + " --data " +
                                   save("ok.pt", torch::tensor({1, 9, 0}, at::kLong)) + " --batch 4 --steps 3 --json");
  ASSERT_EQ(train.code, 0) << train.err;
  EXPECT_NE(nlohmann::json::parse(train.out).at("data").get<std::string>().find("1 batches, 3 rows, with targets"),
            std::string::npos)
      << train.out;
  expect_input_error("train --network " + cnn + input + " --data " + save("bad.pt", torch::tensor({1, 10, 0}, at::kLong)) +
                         " --batch 2 --steps 2",
                     "the data's labels span [1, 10], outside the 10 classes");
}

// A network whose forward refuses one sample (batch norm over a 1x1 map) is
// found, profiled and trained from batch 2 up; asked for batch 1, its own
// error is named.
TEST(ArchiveCommands, ANetworkThatRefusesBatchOneIsProfiledFromTwo) {
  TempDir dir("papaya-archive-batch-two");
  const std::string net = dir.path("norm.pt");
  executor::torchscript::testing::pooled_batch_norm().save(net);
  const std::string shape = " --input 'float32[B,4,2,2]'";
  const std::string profile = dir.path("norm.profile.json");
  const Outcome run = run_papaya("profile --network " + net + shape + " --steps 2 --warmup 1 --probe-batch 0 --out " + profile);
  ASSERT_EQ(run.code, 0) << run.err;
  nlohmann::json written;
  std::ifstream(profile) >> written;
  EXPECT_EQ(written.at("batches").get<std::vector<int>>(), (std::vector<int>{2, 4, 8, 16}));
  // Batch norm saves the pooled map, 4 floats a sample (measured at batches 2 and 4).
  EXPECT_EQ(written["layers"][0]["saved"][0]["storage_bytes_per_sample"], 4 * 4);
  const Outcome train = run_papaya("train --network " + net + shape + " --batch 3 --steps 2");
  EXPECT_EQ(train.code, 0) << train.err;
  expect_input_error("profile --network " + net + shape + " --batch 1,2 --out " + dir.path("p1.json"),
                     "Expected more than 1 value per channel when training");
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
