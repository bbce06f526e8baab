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

constexpr ShapeCut both = ShapeCut::tokens_and_widths;

TEST(ShapeFraction, CutsTheSizesAndKeepsTheCounts) {
  const NetworkConfig whole = load_network_config("qwen-moe-tiny");
  const NetworkConfig cut = at_shape_fraction(whole, 3, 4, both);
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
  EXPECT_EQ(at_shape_fraction(whole, 4, 4, both).document, whole.document);
}

TEST(ShapeFraction, RoundsUpWhatAPartDoesNotDivide) {
  // GPT-2's vocabulary, 50,257, is odd: modelled as 50,272 with 32 parts.
  const NetworkConfig gpt2 = load_network_config("gpt2-small");
  ASSERT_EQ(gpt2.transformer().vocab, 50257);
  EXPECT_EQ(at_shape_fraction(gpt2, 1, 32, both).transformer().vocab, 1571);
  EXPECT_EQ(at_shape_fraction(gpt2, 32, 32, both).transformer().vocab, 50272);
  // A learned position table keeps its rows.
  EXPECT_EQ(at_shape_fraction(gpt2, 1, 32, both).transformer().max_positions, gpt2.transformer().max_positions);
}

TEST(ShapeFraction, PartsDivideTheTokensHeadsAndRotatedPairs) {
  // Llama-2-7B at 4096 tokens: 128 dimensions a head, all 128 rotated in 64 pairs.
  const std::string llama_2_7b = config_dir() + "/hf/llama-2-7b.json";
  EXPECT_EQ(shape_parts_limit(load_network_config(llama_2_7b, 4096), both), 64);
  EXPECT_EQ(shape_parts_limit(load_network_config(llama_2_7b, 1000), both), 8);
  EXPECT_EQ(shape_parts_limit(load_network_config("llama-tiny"), both), 8);  // 16 dimensions a head, 8 pairs
  EXPECT_EQ(shape_parts_limit(load_network_config("resnet-tiny"), both), 1);
  EXPECT_EQ(shape_parts_limit(load_network_config("vit-tiny"), both), 1);
  const NetworkConfig llama = load_network_config("llama-tiny");
  EXPECT_THROW(at_shape_fraction(llama, 1, 16, both), InputError);
  EXPECT_THROW(at_shape_fraction(llama, 5, 4, both), InputError);
  EXPECT_THROW(at_shape_fraction(load_network_config("resnet-tiny"), 1, 4, both), InputError);
  try {
    at_shape_fraction(llama, 1, 16, both);
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("divide into 8 parts"), std::string::npos) << e.what();
  }
}

// The tokens are cut where each expert's share grows with the fraction:
// balanced whole tokens, or forced routings shared out per the smallest
// fraction's, 8 or more to each expert. The widths alone keep the tokens,
// for the experts of fewer.
TEST(ShapeFraction, TheWidthsAloneKeepTheTokens) {
  const NetworkConfig qwen_moe = load_network_config(config_dir() + "/hf/qwen1.5-moe-a2.7b.json");
  const NetworkConfig balanced = with_expert_routing(qwen_moe, 1.0 / 60);
  const NetworkConfig mixtral = load_network_config(config_dir() + "/hf/mixtral-8x7b.json");
  EXPECT_FALSE(routes_tokens_in_proportion(qwen_moe, 8));                           // the router's choice: 256 tokens x 4 over 60
  EXPECT_TRUE(routes_tokens_in_proportion(balanced, 16));                           // 128 tokens x 4 over 60, forced: 8 or 9 each
  EXPECT_FALSE(routes_tokens_in_proportion(balanced, 32));                          // 4 or 5
  EXPECT_TRUE(routes_tokens_in_proportion(mixtral, 64));                            // 32 tokens x 2 over 8: 8 each, whole
  EXPECT_TRUE(routes_tokens_in_proportion(mixtral, 512));                           // 4 tokens x 2 over 8: 1 each, whole
  EXPECT_TRUE(routes_tokens_in_proportion(with_expert_routing(mixtral, 0.3), 32));  // 38 of 128, the others 12 or 13
  EXPECT_FALSE(routes_tokens_in_proportion(with_expert_routing(mixtral, 0.3), 64));  // 19 of 64, the others 6 or 7
  // Forced routings are shared out per the smallest fraction's 512.
  EXPECT_EQ(at_shape_fraction(balanced, 3, 16, both).transformer().moe->routing_unit, 512);
  EXPECT_EQ(at_shape_fraction(balanced, 3, 16, ShapeCut::widths).transformer().moe->routing_unit, 0);
  EXPECT_TRUE(routes_tokens_in_proportion(load_network_config("llama-tiny"), 8));
  const NetworkConfig cut = at_shape_fraction(qwen_moe, 1, 16, ShapeCut::widths);
  EXPECT_EQ(cut.transformer().seq_len, qwen_moe.transformer().seq_len);
  EXPECT_EQ(cut.transformer().d_model * 16, qwen_moe.transformer().d_model);
  // 2,048 tokens limit the parts to 128 and the head's 128 dimensions, 64 rotated pairs, to 64.
  EXPECT_EQ(shape_parts_limit(qwen_moe, ShapeCut::widths), 64);
  EXPECT_EQ(shape_parts_limit(load_network_config("llama-tiny", 12), ShapeCut::widths), 8);
  EXPECT_EQ(shape_parts_limit(load_network_config("llama-tiny", 12), both), 4);
  // A ViT's patches are its image's: its widths alone are cut, to two of each head's 16 dimensions.
  const NetworkConfig vit = load_network_config("vit-tiny");
  EXPECT_EQ(shape_parts_limit(vit, ShapeCut::widths), 8);
  EXPECT_EQ(at_shape_fraction(vit, 1, 4, ShapeCut::widths).transformer().d_model, 16);
  EXPECT_EQ(at_shape_fraction(vit, 1, 4, ShapeCut::widths).sequence_length(), vit.sequence_length());
  EXPECT_THROW(at_shape_fraction(vit, 1, 4, both), InputError);
}

}  // namespace
}  // namespace papaya::model
