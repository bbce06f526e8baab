#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "model/catalog/network_config.h"
#include "model/catalog/parameter_count.h"
#include "model/error.h"
#include "model/json_file.h"

namespace papaya::model {
namespace {

using nlohmann::json;

json gpt() {
  return json::parse(R"({"name": "t", "family": "gpt", "layers": 2, "d_model": 64, "heads": 4,
                         "seq_len": 16, "vocab": 50})");
}

// The message of the InputError that parsing `doc` throws ("" if none).
std::string error_of(const json& doc) {
  try {
    parse_network_config(doc, "t.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(NetworkConfig, EveryShippedConfigLoads) {
  const auto names = shipped_network_names();
  for (const char* expected : {"gpt2-small", "gpt2-medium", "bert-base", "bert-large", "vit-b16", "resnet50", "gpt-tiny",
                               "bert-tiny", "vit-tiny", "resnet-tiny", "mlp-tiny"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
  for (const auto& name : names) {
    const NetworkConfig c = load_network_config(name);
    EXPECT_EQ(c.name, name);
    EXPECT_GT(parameter_count(c), 0);
  }
}

TEST(NetworkConfig, ParsesFieldsAndDefaults) {
  const NetworkConfig c = parse_network_config(gpt(), "t.json");
  EXPECT_EQ(c.family, Family::gpt);
  EXPECT_EQ(c.transformer().head_dim(), 16);
  EXPECT_EQ(c.transformer().mlp_hidden(), 256);
  EXPECT_EQ(c.transformer().activation, "gelu");
  EXPECT_EQ(c.sequence_length(), 16);
}

TEST(NetworkConfig, KnownParameterCounts) {
  EXPECT_NEAR(parameter_count(load_network_config("gpt2-small")) / 1e6, 124.44, 0.01);
  EXPECT_NEAR(parameter_count(load_network_config("resnet50")) / 1e6, 25.56, 0.01);
  EXPECT_NEAR(parameter_count(load_network_config("vit-b16")) / 1e6, 86.57, 0.01);
}

TEST(NetworkConfig, MalformedJsonNamesFileAndLine) {
  const auto path = std::filesystem::temp_directory_path() / "papaya-malformed.json";
  std::ofstream(path) << "{\n  \"name\": \"x\",\n  \"family\": gpt\n}\n";
  try {
    load_network_config(path.string());
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string() + ":3: malformed JSON"), std::string::npos) << e.what();
  }
}

// Found by tests/fuzz/layer_model.cpp: a number past a double escaped as
// nlohmann's out_of_range, from every JSON document.
TEST(NetworkConfig, NumberPastADoubleIsMalformedJson) {
  const auto path = std::filesystem::temp_directory_path() / "papaya-overflow.json";
  std::ofstream(path) << "{\"name\": \"x\", \"family\": \"mlp\", \"input\": 8.096e706}\n";
  try {
    load_network_config(path.string());
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), path.string() + ": malformed JSON in network config: number overflow parsing '8.096e706'");
  }
}

TEST(NetworkConfig, UnknownKeyIsRejected) {
  json doc = gpt();
  doc["layer"] = 3;
  EXPECT_NE(error_of(doc).find("t.json: /"), std::string::npos);
  EXPECT_NE(error_of(doc).find("layer"), std::string::npos) << error_of(doc);
}

TEST(NetworkConfig, WrongTypeNamesThePath) {
  json doc = gpt();
  doc["heads"] = "four";
  EXPECT_NE(error_of(doc).find("/heads"), std::string::npos) << error_of(doc);
}

// OLMoE's q and k norms act on the q and k projections, so they need them apart.
TEST(NetworkConfig, QkNormsNeedSeparateProjections) {
  json doc = gpt();
  doc["qk_norm"] = "head";
  EXPECT_NE(error_of(doc).find("/qk_norm: normalizes q and k projections"), std::string::npos) << error_of(doc);
  doc["fused_qkv"] = false;
  EXPECT_EQ(error_of(doc), "");
}

TEST(NetworkConfig, NonPositiveSizeIsRejected) {
  json doc = gpt();
  doc["d_model"] = 0;
  EXPECT_NE(error_of(doc).find("/d_model"), std::string::npos) << error_of(doc);
  doc = gpt();
  doc["layers"] = -1;
  EXPECT_NE(error_of(doc).find("/layers"), std::string::npos) << error_of(doc);
}

TEST(NetworkConfig, HeadsMustDivideDModel) {
  json doc = gpt();
  doc["heads"] = 5;
  EXPECT_EQ(error_of(doc), "t.json: /heads: 5 heads do not divide d_model 64 (give head_dim)");
}

// A sliding window names its blocks; the first K blocks (what
// --profile-blocks measures) keep those among them, and no window where
// none is; a block past the network, or a window on a bert's or a
// materialized attention, is refused.
TEST(NetworkConfig, ASlidingWindowKeepsItsBlocksAmongTheFirstK) {
  json doc = gpt();
  doc["layers"] = 4;
  doc["sliding_window"] = {{"tokens", 8}, {"blocks", {1, 3}}};
  const NetworkConfig windowed = parse_network_config(doc, "t.json");
  EXPECT_EQ(windowed.transformer().window_of(1), 8);
  EXPECT_EQ(windowed.transformer().window_of(2), 0);
  EXPECT_EQ(with_blocks(windowed, 2).transformer().window_blocks, (std::vector<int>{1}));
  doc["sliding_window"]["blocks"] = {3};
  EXPECT_EQ(with_blocks(parse_network_config(doc, "t.json"), 2).transformer().sliding_window, 0);
  doc["sliding_window"]["blocks"] = {4};
  EXPECT_EQ(error_of(doc), "t.json: /sliding_window/blocks/0: block 4 of 4");
  doc["sliding_window"]["blocks"] = {0};
  doc["attention"] = "materialized";
  EXPECT_NE(error_of(doc).find("/sliding_window: a window of causal attention"), std::string::npos) << error_of(doc);
}

// Run through tests/fuzz/network_config.cpp: heads 2^32 read as 0, and
// d_model % heads divided by zero (SIGFPE); a mixture's groups alike.
TEST(NetworkConfig, IntegersBeyondAnIntAreRejected) {
  json doc = gpt();
  doc["heads"] = int64_t{1} << 32;
  EXPECT_EQ(error_of(doc), "t.json: /heads: 4294967296 is out of range");
  const json resnet = json::parse(R"({"name": "r", "family": "resnet", "block": "basic", "stages": [1, 4294967297],
                                      "image_size": 32, "classes": 10})");
  EXPECT_EQ(error_of(resnet), "t.json: /stages/1: 4294967297 is out of range");
  // Nested ones too: a mixture's groups 2^32 read as 0, then the experts
  // divided by them; a latent attention's rank 2^32 + 1 read as 1.
  json deepseek = load_network_config("deepseek-v3-tiny").document;
  deepseek["moe"]["groups"] = int64_t{1} << 32;
  EXPECT_EQ(error_of(deepseek), "t.json: /moe/groups: 4294967296 is out of range");
  deepseek = load_network_config("deepseek-v3-tiny").document;
  deepseek["latent_attention"]["kv_rank"] = (int64_t{1} << 32) + 1;
  EXPECT_EQ(error_of(deepseek), "t.json: /latent_attention/kv_rank: 4294967297 is out of range");
}

// A ViT's sequence length (patches + class token) overflowed an int.
TEST(NetworkConfig, TooManyPatchesAreRejected) {
  const json doc = json::parse(R"({"name": "v", "family": "vit", "layers": 1, "d_model": 8, "heads": 2,
                                   "image_size": 2147483647, "patch": 1, "classes": 3})");
  EXPECT_NE(error_of(doc).find("t.json: /patch: "), std::string::npos) << error_of(doc);
}

TEST(NetworkConfig, MissingRequiredFieldOfFamily) {
  json doc = gpt();
  doc.erase("vocab");
  EXPECT_NE(error_of(doc).find("vocab"), std::string::npos) << error_of(doc);
}

TEST(NetworkConfig, ForeignKeyOfAnotherFamily) {
  json doc = gpt();
  doc["image_size"] = 32;
  EXPECT_EQ(error_of(doc), "t.json: /image_size: not an option of a gpt network");
}

// A forced routing's busiest share lies from balanced (1 / experts) to one
// routing of every token (1 / experts_per_token).
TEST(NetworkConfig, ABusiestExpertsShareIsWithinItsRange) {
  json doc = gpt();
  doc["activation"] = "swiglu";
  doc["moe"] = {{"experts", 4}, {"experts_per_token", 2}, {"expert_hidden", 32}, {"busiest_share", 0.25}};
  EXPECT_EQ(error_of(doc), "");
  EXPECT_DOUBLE_EQ(*parse_network_config(doc, "t.json").transformer().moe->busiest_share, 0.25);
  for (double share : {0.2, 0.6}) {
    doc["moe"]["busiest_share"] = share;
    EXPECT_EQ(error_of(doc), "t.json: /moe/busiest_share: a share from 1/4 (balanced) to 1/2 (every token)") << share;
  }
}

TEST(NetworkConfig, UnknownFamily) {
  json doc = gpt();
  doc["family"] = "lstm";
  EXPECT_NE(error_of(doc).find("/family: 'lstm' is not one of"), std::string::npos) << error_of(doc);
}

TEST(NetworkConfig, PatchMustDivideImage) {
  const json doc = json::parse(R"({"name": "v", "family": "vit", "layers": 1, "d_model": 8, "heads": 2,
                                   "image_size": 30, "patch": 8, "classes": 3})");
  EXPECT_NE(error_of(doc).find("/patch"), std::string::npos) << error_of(doc);
}

TEST(NetworkConfig, UnknownNameListsTheKnownOnes) {
  try {
    load_network_config("gpt-huge");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown network 'gpt-huge'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("gpt-tiny"), std::string::npos);
  }
}

}  // namespace
}  // namespace papaya::model
