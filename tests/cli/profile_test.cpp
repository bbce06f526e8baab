// End-to-end runs of `papaya profile`: the file it writes, what it prints,
// and its exit codes.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "model/profile.h"
#include "tests/cli/run_papaya.h"

namespace papaya::testing {
namespace {

using nlohmann::json;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("papaya-cli-profile-" + name)).string();
}

TEST(CliProfile, WritesAProfileAndPrintsASummary) {
  const std::string out = temp_path("gpt.json");
  const Outcome run =
      run_papaya("profile --network gpt-tiny --batch 2,1 --steps 2 --warmup 1 --device cpu --out " + out + " --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json summary = json::parse(run.out);
  EXPECT_EQ(summary["network"], "gpt-tiny");
  EXPECT_EQ(summary["out"], out);
  ASSERT_EQ(summary["batches"].size(), 2u);
  for (const auto& b : summary["batches"]) {
    EXPECT_FALSE(b["oom"].get<bool>());
    EXPECT_GT(b["layer_time_share"].get<double>(), 0);  // how much is the machine's to say: papaya profile's table
    EXPECT_GT(b["saved_bytes"].get<double>(), 0);
  }
  const model::Profile profile = model::read_profile(out);
  EXPECT_EQ(profile.batches, (std::vector<int>{1, 2}));
  EXPECT_EQ(profile.layers.size(), summary["layers"].get<size_t>());
  EXPECT_EQ(profile.network_config["name"], "gpt-tiny");
  // Each layer also alone at 16 x the largest batch.
  EXPECT_EQ(summary["probe_batch"], 32);
  EXPECT_EQ(profile.probe_batch, 32);
  EXPECT_EQ(summary["probed_layers"], summary["layers"]);
  std::filesystem::remove(out);
}

TEST(CliProfile, PrintsPerLayerAndPerBatchTables) {
  const std::string out = temp_path("mlp.json");
  const Outcome run =
      run_papaya("profile --network mlp-tiny --batch 1,4096 --steps 1 --warmup 0 --memory-limit 4MiB --out " + out);
  ASSERT_EQ(run.code, 0) << run.err;
  for (const char* text : {"blocks.0.fc", "fwd ms (b=1)", "fwd ms (b=65536, probe)", "saved/sample", "layers cover",
                           "out of memory", "profile written to"}) {
    EXPECT_NE(run.out.find(text), std::string::npos) << text << "\n" << run.out;
  }
  EXPECT_TRUE(model::read_profile(out).iterations[1].oom);
  std::filesystem::remove(out);
  EXPECT_NE(run_papaya("--help").out.find("profile"), std::string::npos);
}

TEST(CliProfile, BadInputExitsTwoWithOneLine) {
  const std::string out = temp_path("bad.json");
  expect_input_error("profile --network gpt-huge --out " + out, "unknown network 'gpt-huge'");
  expect_input_error("profile --batch 1,x --out " + out, "--batch: 'x' is not a positive integer");
  expect_input_error("profile --batch 0 --out " + out, "--batch");
  expect_input_error("profile --batch 2,2 --out " + out, "batch size 2 is repeated");
  expect_input_error("profile --device cuda --out " + out, "device cuda: ");
  expect_input_error("profile --precision fp8 --out " + out, "precision fp8: ");
  expect_input_error("profile --memory-limit lots --out " + out, "--memory-limit");
  expect_input_error("profile --batch 1,4 --probe-batch 3 --out " + out,
                     "probe batch 3 is not larger than the largest batch (4)");
  expect_input_error("profile --probe-batch -1 --out " + out, "--probe-batch");
  expect_input_error("profile --network mlp-tiny --memory-limit 1KiB --out " + out,
                     "of weights, gradients and AdamW state alone, more than this device's 1.00 KiB");
  expect_input_error("profile --network mlp-tiny --batch 4096 --memory-limit 4MiB --out " + out, "ran out of memory");
  expect_input_error("profile --network mlp-tiny", "--out");
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(CliProfile, UnwritableOutFailsBeforeProfiling) {
  expect_input_error("profile --network gpt-tiny --out /nonexistent-folder/p.json", "cannot write in /nonexistent-folder");
  expect_input_error("profile --network gpt-tiny --out " + std::filesystem::temp_directory_path().string(), "is a folder");
}

}  // namespace
}  // namespace papaya::testing
