// Layer-name patterns of --freeze: globs over paths, with numeric ranges.
#include <gtest/gtest.h>

#include "model/catalog/layer_pattern.h"
#include "model/error.h"

namespace papaya::model {
namespace {

TEST(LayerPattern, MatchesGlobsAndNumberRanges) {
  EXPECT_TRUE(matches_layer_pattern("tok_emb", "tok_emb"));
  EXPECT_FALSE(matches_layer_pattern("tok_emb", "tok_emb2"));
  EXPECT_TRUE(matches_layer_pattern("*emb", "pos_emb"));
  EXPECT_TRUE(matches_layer_pattern("blocks.*", "blocks.3.attn.q"));  // '*' crosses dots
  EXPECT_TRUE(matches_layer_pattern("blocks.?.ln1", "blocks.3.ln1"));
  EXPECT_FALSE(matches_layer_pattern("blocks.?.ln1", "blocks.13.ln1"));
  EXPECT_TRUE(matches_layer_pattern("blocks.[0-11].*", "blocks.0.mlp.fc1"));
  EXPECT_TRUE(matches_layer_pattern("blocks.[0-11].*", "blocks.11.mlp.fc1"));
  EXPECT_FALSE(matches_layer_pattern("blocks.[0-11].*", "blocks.12.mlp.fc1"));
  EXPECT_FALSE(matches_layer_pattern("blocks.[0-11].*", "blocks.x.mlp.fc1"));
  EXPECT_TRUE(matches_layer_pattern("blocks.[2-3].attn.*", "blocks.2.attn.proj"));
  EXPECT_FALSE(matches_layer_pattern("blocks.[2-3].attn.*", "blocks.2.mlp.fc2"));
  // Each star tries every split once: no backtracking blow-up.
  std::string stars;
  for (int i = 0; i < 30; ++i) stars += "*a";
  EXPECT_FALSE(matches_layer_pattern(stars + "*b", std::string(200, 'a')));
  EXPECT_TRUE(matches_layer_pattern(stars + "*", std::string(200, 'a')));
}

std::string error_of(const std::string& pattern) {
  try {
    check_layer_pattern(pattern, "--freeze");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(LayerPattern, MalformedBracketsAreNamed) {
  EXPECT_EQ(error_of("blocks.[0-11].*"), "");
  EXPECT_EQ(error_of("blocks.[3-1].*"), "--freeze: 'blocks.[3-1].*': a bracket is a range of block numbers [a-b] with a <= b");
  EXPECT_EQ(error_of("blocks.[ab].*"), "--freeze: 'blocks.[ab].*': a bracket is a range of block numbers [a-b] with a <= b");
  EXPECT_EQ(error_of("blocks.[0-1"), "--freeze: 'blocks.[0-1': a bracket is a range of block numbers [a-b] with a <= b");
  EXPECT_EQ(error_of("blocks.0]"), "--freeze: 'blocks.0]': a ']' without its '['");
  EXPECT_EQ(error_of(""), "--freeze: an empty layer pattern");
}

}  // namespace
}  // namespace papaya::model
