#include <gtest/gtest.h>

#include <algorithm>

#include "executor/layout_probe.h"
#include "executor/networks/zoo.h"
#include "model/catalog/network_config.h"

namespace papaya::executor {
namespace {

const model::LayoutLayer& layer(const model::NetworkLayout& layout, const std::string& path) {
  const auto* found = layout.find_layer(path);
  if (!found) throw std::runtime_error("no layer " + path);
  return *found;
}

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

TEST(Layout, GptSharingIsFound) {
  auto network = build_network(model::load_network_config("gpt-tiny"));
  const model::NetworkLayout layout = probe_layout(*network);
  EXPECT_EQ(layout.layers.size(), network->layers().size());
  EXPECT_EQ(layout.segments, (std::vector<std::string>{"blocks.0", "blocks.1"}));
  EXPECT_EQ(layer(layout, "blocks.0.mlp.fc1").segment, "blocks.0");
  EXPECT_EQ(layer(layout, "lm_head").segment, "");
  // The GELU's output is the next linear's saved input.
  EXPECT_TRUE(contains(layer(layout, "blocks.0.mlp.act").output_saved_by, "blocks.0.mlp.fc2:input"));
  // Fused attention's output, token-major, is the output projection's saved input.
  EXPECT_EQ(layer(layout, "blocks.0.attn.proj").find_slot("input")->storage, "blocks.0.attn.fused:output");
  EXPECT_TRUE(contains(layer(layout, "blocks.0.attn.fused").output_saved_by, "blocks.0.attn.proj:input"));
  // The pre-norm's input (the residual stream) is its own storage.
  EXPECT_EQ(layer(layout, "blocks.1.ln1").find_slot("input")->storage, "blocks.1.ln1:input");
  // Materialized and without dropout, the context product saves the softmax's own output.
  const model::NetworkLayout materialized =
      probe_layout(*build_network(model::with_attention(model::load_network_config("gpt-tiny"), "materialized")));
  EXPECT_EQ(layer(materialized, "blocks.0.attn.context").find_slot("probs")->storage, "blocks.0.attn.softmax:output");
  EXPECT_EQ(layer(materialized, "blocks.0.attn.softmax").find_slot("output")->storage, "blocks.0.attn.softmax:output");
}

TEST(Layout, ResNetReluOutputIsSavedByItsConsumers) {
  auto network = build_network(model::load_network_config("resnet-tiny"));
  const model::NetworkLayout layout = probe_layout(*network);
  const auto& relu = layer(layout, "relu");
  EXPECT_TRUE(contains(relu.output_saved_by, "maxpool:input"));
  EXPECT_EQ(layer(layout, "maxpool").find_slot("input")->storage, "relu:output");
  EXPECT_TRUE(contains(layer(layout, "layer1.0.relu1").output_saved_by, "layer1.0.conv2:input"));
}

}  // namespace
}  // namespace papaya::executor
