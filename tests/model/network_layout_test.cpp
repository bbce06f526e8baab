// A layer's transformer block, read from its path: the index after
// "blocks.", and none for a path outside the blocks or without an index.
#include <gtest/gtest.h>

#include "model/network_layout.h"

namespace papaya::model {
namespace {

TEST(NetworkLayout, ABlockIsTheIndexAfterBlocks) {
  EXPECT_EQ(block_of_path("blocks.0"), 0);
  EXPECT_EQ(block_of_path("blocks.3.mlp.fc1"), 3);
  EXPECT_EQ(block_of_path("blocks.60.moe.experts.255.fc2"), 60);
}

TEST(NetworkLayout, NoBlockOutsideTheBlocks) {
  EXPECT_EQ(block_of_path("tok_emb"), -1);
  EXPECT_EQ(block_of_path("blocks"), -1);
  EXPECT_EQ(block_of_path("blocks."), -1);
  EXPECT_EQ(block_of_path("blocks.attn"), -1);
  EXPECT_EQ(block_of_path("encoder.blocks.2.fc1"), -1);
  EXPECT_EQ(block_of_path("blocks.99999999999.fc1"), -1);  // past an int
}

}  // namespace
}  // namespace papaya::model
