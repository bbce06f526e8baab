// A network at a fraction of its shape (model/catalog/shape_fraction.h): the
// sizes cut, the counts kept, sizes a part does not divide rounded up, and
// the parts a network allows.
#include <gtest/gtest.h>

#include "model/catalog/network_config.h"
#include "model/catalog/shape_fraction.h"
#include "model/error.h"
#include "model/json_file.h"

namespace papaya::model {
namespace {

TEST(ShapeFraction, CutsTheSizesAndKeepsTheCounts) {
  const NetworkConfig whole = load_network_config("qwen-moe-tiny");
  const NetworkConfig cut = at_shape_fraction(whole, 3, 4);
  const TransformerConfig& w = whole.transformer();
  const TransformerConfig& c = cut.transformer();
  EXPECT_EQ(c.seq_len, 24);
  EXPECT_EQ(c.head_dim(), 12);
  EXPECT_EQ(c.d_model, 48);
  EXPECT_EQ(c.mlp_hidden(), 96);
  EXPECT_EQ(c.vocab, 96);
  EXPECT_EQ(c.moe->expert_hidden, 24);
  EXPECT_EQ(c.moe->shared_hidden, 72);
  EXPECT_EQ(c.heads, w.heads);
  EXPECT_EQ(c.kv_heads, w.kv_heads);
  EXPECT_EQ(c.layers, w.layers);
  EXPECT_EQ(c.moe->experts, w.moe->experts);
  EXPECT_EQ(c.moe->dense_blocks, w.moe->dense_blocks);
  EXPECT_EQ(c.rotary_dims(), 12);
  EXPECT_EQ(cut.name, whole.name);
  // The whole shape is the network itself where every size divides.
  EXPECT_EQ(at_shape_fraction(whole, 4, 4).document, whole.document);
}

TEST(ShapeFraction, RoundsUpWhatAPartDoesNotDivide) {
  // GPT-2's vocabulary, 50,257, is odd: modelled as 50,272 with 32 parts.
  const NetworkConfig gpt2 = load_network_config("gpt2-small");
  ASSERT_EQ(gpt2.transformer().vocab, 50257);
  EXPECT_EQ(at_shape_fraction(gpt2, 1, 32).transformer().vocab, 1571);
  EXPECT_EQ(at_shape_fraction(gpt2, 32, 32).transformer().vocab, 50272);
  // A learned position table keeps its rows.
  EXPECT_EQ(at_shape_fraction(gpt2, 1, 32).transformer().max_positions, gpt2.transformer().max_positions);
}

TEST(ShapeFraction, PartsDivideTheTokensHeadsAndRotatedPairs) {
  // Llama-2-7B at 4096 tokens: 128 dimensions a head, all 128 rotated in 64 pairs.
  const std::string llama_2_7b = config_dir() + "/hf/llama-2-7b.json";
  EXPECT_EQ(shape_parts_limit(load_network_config(llama_2_7b, 4096)), 64);
  EXPECT_EQ(shape_parts_limit(load_network_config(llama_2_7b, 1000)), 8);
  EXPECT_EQ(shape_parts_limit(load_network_config("llama-tiny")), 8);  // 16 dimensions a head, 8 pairs
  EXPECT_EQ(shape_parts_limit(load_network_config("resnet-tiny")), 1);
  EXPECT_EQ(shape_parts_limit(load_network_config("vit-tiny")), 1);
  const NetworkConfig llama = load_network_config("llama-tiny");
  EXPECT_THROW(at_shape_fraction(llama, 1, 16), InputError);
  EXPECT_THROW(at_shape_fraction(llama, 5, 4), InputError);
  EXPECT_THROW(at_shape_fraction(load_network_config("resnet-tiny"), 1, 4), InputError);
  try {
    at_shape_fraction(llama, 1, 16);
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("divide into 8 parts"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace papaya::model
