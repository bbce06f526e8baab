// `profile --profile-blocks`: a transformer profiled with 2 of its 4 blocks
// (3 where a dense block precedes its mixtures) and scaled to 4 (model/fit/block_scaling.h) against the same network profiled
// whole. The blocks are the same code on the same machine, so every layer's
// description (its FLOPs among them: a windowed block's attention sees fewer
// keys) and memory figure, and every predicted peak, must come out as the
// whole profile's; times are copies of the last profiled block of the same
// window and are the benchmark's to judge (bench/prediction_accuracy.sh,
// PROFILE_BLOCKS).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/catalog/network_config.h"
#include "model/catalog/parameter_count.h"
#include "model/catalog/target.h"
#include "model/error.h"
#include "model/fit/fit_profile.h"
#include "model/json_file.h"
#include "model/plan.h"
#include "model/plan_space/predict.h"
#include "profiler/profiler.h"
#include "tests/support/quick_fit.h"
#include "tests/support/test_names.h"

namespace papaya::profiler {
namespace {

class ProfileBlocks : public ::testing::TestWithParam<std::string> {};

TEST_P(ProfileBlocks, TheFewestBlocksOfEveryKindScaleToTheWholeNetworksLayersAndBytes) {
  nlohmann::json doc = model::load_network_config(GetParam()).document;
  doc["name"] = GetParam() + "-4-blocks";
  doc["layers"] = 4;
  // Windowed and global blocks alternating (Gemma 2's, GPT-OSS's): the third
  // block is modelled from the first, not from the last profiled.
  if (doc.contains("sliding_window")) doc["sliding_window"]["blocks"] = {0, 2};
  // Experts' tokens as the modelling commands route them: balanced, so that
  // every mixture holds what the others do.
  if (doc.contains("moe")) doc["moe"]["busiest_share"] = 1.0 / doc["moe"]["experts"].get<double>();
  const std::string path = (std::filesystem::temp_directory_path() / ("papaya-test-" + GetParam() + "-4.json")).string();
  std::ofstream(path) << doc;
  // 2, but DeepSeek-V3's dense block and two mixtures: 3.
  const int fewest = model::blocks_with_every_kind(model::load_network_config(path).transformer());
  EXPECT_EQ(fewest, GetParam().rfind("deepseek-v3", 0) == 0 ? 3 : 2);
  const model::LayerModel scaled = quick_fit(path, std::nullopt, fewest);
  const model::LayerModel whole = quick_fit(path, std::nullopt, 0);
  std::filesystem::remove(path);

  ASSERT_TRUE(same_layer_descriptions(scaled, whole));
  expect_same_bytes(scaled.static_bytes, whole.static_bytes, "static bytes");
  for (size_t j = 0; j < whole.layers.size(); ++j) {
    const model::LayerFit& s = scaled.layers[j];
    const model::LayerFit& w = whole.layers[j];
    expect_same_memory_figures(s, w);
  }
  expect_same_segments_and_peaks(scaled, whole, {16});
}

INSTANTIATE_TEST_SUITE_P(Cpu, ProfileBlocks,
                         ::testing::Values("gpt-tiny", "llama-tiny", "bert-hf-tiny", "vit-tiny", "gemma2-tiny", "gemma3-tiny",
                                           "deepseek-v3-tiny", "deepseek-v3-mtp-tiny"),
                         test_support::NetworkParamName());

// Unasked, the whole network is profiled where its 16 bytes a parameter take
// at most half of the memory, and 2 blocks (said) where they take more.
TEST(ProfileBlocks, TwoBlocksUnaskedOnlyWhereTheWholeNetworksStateTakesOverHalfTheMemory) {
  nlohmann::json doc = model::load_network_config("gpt-tiny").document;
  doc["layers"] = 4;
  const std::string path = (std::filesystem::temp_directory_path() / "papaya-test-auto-blocks.json").string();
  std::ofstream(path) << doc;
  const double state = 16.0 * static_cast<double>(model::parameter_count(model::load_network_config(path)));
  ProfileOptions options;
  options.network = model::load_network_config(path);
  options.batches = {1};
  options.warmup = 0;
  options.steps = 1;
  options.rounds = 1;
  options.probe_batch = 0;
  std::vector<std::string> warnings;
  options.on_warning = [&](const std::string& message) { warnings.push_back(message); };
  options.memory_limit = static_cast<int64_t>(2.5 * state);
  EXPECT_EQ(profile_network(options).profiled_blocks, 0);
  EXPECT_TRUE(warnings.empty());
  options.memory_limit = static_cast<int64_t>(1.5 * state);
  EXPECT_EQ(profile_network(options).profiled_blocks, 2);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("profiling 2 of its 4 blocks"), std::string::npos) << warnings[0];
  std::filesystem::remove(path);
}

// The fewest first blocks holding every kind: Gemma 3's first global block
// is its sixth; DeepSeek-V3's first mixture its fourth, and a second one is
// needed for what one more holds; fewer asked is refused, naming how many.
TEST(ProfileBlocks, EveryKindOfBlockIsAmongTheProfiledBlocks) {
  nlohmann::json doc = model::load_network_config("gemma3-tiny").document;
  doc["layers"] = 8;
  doc["sliding_window"]["blocks"] = {0, 1, 2, 3, 4, 6, 7};
  const std::string path = (std::filesystem::temp_directory_path() / "papaya-test-gemma3-8.json").string();
  std::ofstream(path) << doc;
  const model::NetworkConfig config = model::load_network_config(path);
  std::filesystem::remove(path);
  EXPECT_EQ(model::block_kinds(config.transformer()), (std::vector<int>{0, 0, 0, 0, 0, 1, 0, 0}));
  EXPECT_EQ(model::blocks_with_every_kind(config.transformer()), 6);
  EXPECT_EQ(model::blocks_with_every_kind(model::load_network_config("gemma2-tiny").transformer()), 2);  // 0 and 2 windowed
  EXPECT_EQ(model::blocks_with_every_kind(model::load_network_config("llama-tiny").transformer()), 2);
  const model::TransformerConfig deepseek =
      model::load_network_config(model::config_dir() + "/hf/deepseek-v3.json").transformer();
  EXPECT_EQ(model::block_kinds(deepseek)[2], 0);
  EXPECT_EQ(model::block_kinds(deepseek)[3], 1);
  EXPECT_EQ(model::blocks_with_every_kind(deepseek), 5);
  ProfileOptions options;
  options.network = config;
  options.batches = {1};
  options.profile_blocks = 5;
  try {
    profile_network(options);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("5 blocks do not hold every kind of its 8 (an attention window, an MLP or a mixture "
                                         "of experts; two alike last): profile 6 or more"),
              std::string::npos)
        << e.what();
  }
}

TEST(ProfileBlocks, OnlyATransformersTwoToAllBlocks) {
  ProfileOptions options;
  options.batches = {1};
  options.network = model::load_network_config("gpt-tiny");
  for (const int blocks : {1, 3}) {
    options.profile_blocks = blocks;
    EXPECT_THROW(profile_network(options), InputError) << blocks;
  }
  options.network = model::load_network_config("resnet-tiny");
  options.profile_blocks = 2;
  try {
    profile_network(options);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("2 blocks: a resnet network has no identical blocks"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace papaya::profiler
