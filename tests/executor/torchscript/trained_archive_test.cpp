#include "executor/torchscript/trained_archive.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "executor/data.h"
#include "executor/networks/source_for.h"
#include "executor/torchscript/archive.h"
#include "executor/torchscript/imported_network.h"
#include "model/error.h"
#include "tests/executor/torchscript/fixtures.h"

namespace papaya::executor::torchscript {
namespace {

// Whether any method of the module or of a module under it runs one of
// papaya's ops, which only papaya can run.
bool runs_papayas_ops(const torch::jit::Module& module) {
  for (const auto& m : module.modules()) {
    for (const auto& method : m.get_methods()) {
      if (method.graph()->toString().find("papaya::") != std::string::npos) return true;
    }
  }
  return false;
}

// One training step of an archive (its weights stepped, its batch norm's
// running statistics moved), written back: the archive loads without papaya,
// holds the trained values to the bit under the archive's own names, and
// computes what the trained network computes.
TEST(TrainedArchive, IsTheArchiveWithTheTrainedValues) {
  const torch::jit::ExtraFilesMap extra{{"papaya.json", R"({"inputs": ["float32[B,4,2,2]"]})"}};
  const std::string path = testing::saved(testing::pooled_batch_norm(), "trained", extra);
  const std::string out = path + ".trained.pt";
  const model::NetworkConfig config = archive_config(path, {}, "--input", std::nullopt);
  const auto network = source_for(config)->build();
  network->train(true);
  const Batch batch = make_synthetic_data(config, torch::kCPU, 3)->next(4);
  torch::optim::AdamW optimizer(network->parameters(), torch::optim::AdamWOptions(0.1));
  network->loss(batch).backward();
  optimizer.step();
  const auto& imported = dynamic_cast<const ImportedNetwork&>(*network);
  ASSERT_TRUE(runs_papayas_ops(imported.module())) << "the network's own module carries papaya's markers";
  save_trained_archive(path, imported.module(), out);

  torch::jit::ExtraFilesMap extra_back{{"papaya.json", ""}};
  torch::jit::Module back = torch::jit::load(out, torch::kCPU, extra_back);
  const torch::jit::Module given = torch::jit::load(path);
  std::remove(out.c_str());
  std::remove(path.c_str());
  EXPECT_FALSE(runs_papayas_ops(back));
  EXPECT_EQ(extra_back.at("papaya.json"), extra.at("papaya.json"));
  const auto expect_trained = [](const auto& trained, const auto& written, const auto& before) {
    std::map<std::string, at::Tensor> by_name, given_by_name;
    for (const auto& t : trained) by_name.emplace(t.name, t.value);
    for (const auto& t : before) given_by_name.emplace(t.name, t.value);
    size_t count = 0;
    for (const auto& t : written) {
      ++count;
      EXPECT_TRUE(torch::equal(t.value, by_name.at(t.name))) << t.name;
      EXPECT_FALSE(torch::equal(t.value, given_by_name.at(t.name))) << t.name << " moved in the step";
    }
    EXPECT_EQ(count, by_name.size());
  };
  expect_trained(imported.module().named_parameters(), back.named_parameters(), given.named_parameters());
  expect_trained(imported.module().named_buffers(), back.named_buffers(), given.named_buffers());
  torch::jit::Module trained = imported.module();
  trained.eval();
  back.eval();
  EXPECT_TRUE(torch::equal(back.forward({batch.input}).toTensor(), trained.forward({batch.input}).toTensor()));
}

TEST(TrainedArchive, AFileThatCannotBeWrittenIsNamed) {
  const std::string path = testing::saved(testing::pooled_batch_norm(), "unwritable");
  const torch::jit::Module module = torch::jit::load(path);
  const std::string out = "/nonexistent-papaya-folder/trained.pt";
  try {
    save_trained_archive(path, module, out);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(out), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace papaya::executor::torchscript
