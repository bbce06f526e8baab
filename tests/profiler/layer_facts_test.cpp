// What a profile says of each layer without timing it, worked out by hand for
// a few layers of the tiny networks (configs/networks/*-tiny.json).
#include <gtest/gtest.h>

#include "executor/layout_probe.h"
#include "executor/networks/zoo.h"
#include "model/catalog/network_config.h"
#include "profiler/layer_facts.h"

namespace papaya::profiler {
namespace {

std::vector<model::LayerProfile> facts_of(const std::string& network) {
  auto built = executor::build_network(model::load_network_config(network));
  return describe_layers(*built, executor::probe_layout(*built));
}

const model::LayerProfile& layer(const std::vector<model::LayerProfile>& layers, const std::string& path) {
  for (const auto& l : layers) {
    if (l.path == path) return l;
  }
  throw std::runtime_error("no layer " + path);
}

const model::SavedTensorProfile& slot(const model::LayerProfile& l, const std::string& name) {
  for (const auto& s : l.saved) {
    if (s.slot == name) return s;
  }
  throw std::runtime_error("no slot " + name + " in " + l.path);
}

// gpt-tiny: 32 tokens, d_model 64, 4 heads of 16, MLP 256, vocabulary 128.
TEST(LayerFacts, GptTinyByHand) {
  const auto layers = facts_of("gpt-tiny");
  const auto& qkv = layer(layers, "blocks.0.attn.qkv");
  EXPECT_EQ(qkv.kind, model::LayerKind::linear);
  EXPECT_EQ(qkv.segment, "blocks.0");
  EXPECT_DOUBLE_EQ(qkv.forward_flops_per_sample, 2.0 * 64 * 32 * 192 + 32 * 192);
  EXPECT_DOUBLE_EQ(qkv.forward_bytes_moved_per_sample, (32 * 64 + 32 * 192) * 4.0);
  EXPECT_DOUBLE_EQ(qkv.output_bytes_per_sample, 32 * 192 * 4.0);
  EXPECT_EQ(qkv.parameter_bytes, (64 * 192 + 192) * 4);
  EXPECT_EQ(slot(qkv, "input").sample_shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(slot(qkv, "input").storage, "blocks.0.attn.qkv:input");  // the norm's output

  // Fused attention: 4 heads x 32 query rows, each attending (32 + 1) / 2
  // keys on average (causal), 4·16 FLOPs of products and 5 of softmax a pair.
  const auto& attention = layer(layers, "blocks.0.attn.fused");
  EXPECT_DOUBLE_EQ(attention.forward_flops_per_sample, (4.0 * 16 + 5) * 4 * 32 * 16.5);
  // Read: q, k, v (4 x 32 x 16 each); written: the output and the fp32 log-sum-exp a row and head.
  EXPECT_DOUBLE_EQ(attention.forward_bytes_moved_per_sample, 4 * (4 * 32 * 16) * 4.0 + 4 * 32 * 4.0);
  EXPECT_EQ(slot(attention, "lse").kind, model::SlotKind::stats);
  EXPECT_EQ(slot(attention, "lse").sample_shape, (std::vector<int64_t>{4, 32}));
  EXPECT_EQ(slot(attention, "k").sample_shape, (std::vector<int64_t>{4, 32, 16}));
  // Its output, token-major, is the output projection's saved input: one storage.
  EXPECT_EQ(slot(attention, "output").storage, "blocks.0.attn.fused:output");
  EXPECT_EQ(slot(layer(layers, "blocks.0.attn.proj"), "input").storage, "blocks.0.attn.fused:output");
  EXPECT_DOUBLE_EQ(layer(layers, "blocks.0.mlp.act").forward_flops_per_sample, 8.0 * 32 * 256);
  const auto& head = layer(layers, "lm_head");
  EXPECT_DOUBLE_EQ(head.forward_flops_per_sample, 2.0 * 64 * 32 * 128 + 6.0 * 32 * 128);
  EXPECT_EQ(head.parameter_bytes, 0);  // tied to the token embedding, which owns it

  // The GELU's output is the next linear's saved input: one storage.
  EXPECT_EQ(slot(layer(layers, "blocks.0.mlp.fc2"), "input").storage, "blocks.0.mlp.fc2:input");
  EXPECT_EQ(layer(layers, "blocks.0.mlp.act").output_saved_by, (std::vector<std::string>{"blocks.0.mlp.fc2:input"}));

  // Token ids are a window of a (batch, 33) buffer that the targets share:
  // 32 ids per sample keep 33 alive.
  const auto& ids = slot(layer(layers, "tok_emb"), "ids");
  EXPECT_EQ(ids.dtype, "int64");
  EXPECT_EQ(ids.element_size, 8);
  EXPECT_TRUE(ids.per_sample);
  EXPECT_DOUBLE_EQ(ids.numel_per_sample, 32);
  EXPECT_DOUBLE_EQ(ids.storage_bytes_per_sample, 33 * 8);
  const auto& mean = slot(layer(layers, "ln_f"), "mean");
  EXPECT_EQ(mean.kind, model::SlotKind::stats);
  EXPECT_EQ(mean.sample_shape, (std::vector<int64_t>{32, 1}));
}

// vit-tiny: 16 patches + a class token, d_model 64. The classifier saves the
// class token's row, a view that keeps the whole final norm's output alive.
// gpt-tiny with a sliding window of 8 tokens in its second block: each row
// attends its last 8 keys, the first 7 rows fewer: 8 - 8·7 / (2·32) keys a
// row on average; the first block's attention as it was.
TEST(LayerFacts, ASlidingWindowCountsTheKeysEachRowSees) {
  nlohmann::json doc = model::load_network_config("gpt-tiny").document;
  doc["sliding_window"] = {{"tokens", 8}, {"blocks", {1}}};
  auto built = executor::build_network(model::parse_network_config(doc, "windowed.json"));
  const auto layers = describe_layers(*built, executor::probe_layout(*built));
  EXPECT_DOUBLE_EQ(layer(layers, "blocks.0.attn.fused").forward_flops_per_sample, (4.0 * 16 + 5) * 4 * 32 * 16.5);
  EXPECT_DOUBLE_EQ(layer(layers, "blocks.1.attn.fused").forward_flops_per_sample,
                   (4.0 * 16 + 5) * 4 * 32 * (8 - 8.0 * 7 / (2 * 32)));
}

TEST(LayerFacts, VitHeadSavesAViewOfTheWholeSequence) {
  const auto layers = facts_of("vit-tiny");
  const auto& input = slot(layer(layers, "head"), "input");
  EXPECT_EQ(input.sample_shape, (std::vector<int64_t>{64}));
  EXPECT_DOUBLE_EQ(input.numel_per_sample, 64);
  EXPECT_DOUBLE_EQ(input.storage_bytes_per_sample, 17 * 64 * 4.0);
}

// resnet-tiny: 32px images, a 7x7 stride-2 stem of 16 channels, a 3x3
// stride-2 max-pool.
TEST(LayerFacts, ResNetTinyByHand) {
  const auto layers = facts_of("resnet-tiny");
  EXPECT_DOUBLE_EQ(layer(layers, "conv1").forward_flops_per_sample, 2.0 * 3 * 7 * 7 * 16 * 16 * 16);
  const auto& pool = layer(layers, "maxpool");
  EXPECT_DOUBLE_EQ(pool.forward_flops_per_sample, 9.0 * 16 * 8 * 8);
  EXPECT_EQ(slot(pool, "indices").dtype, "int64");
  EXPECT_EQ(slot(pool, "input").storage, "relu:output");
  // input read, output written, indices written
  EXPECT_DOUBLE_EQ(pool.forward_bytes_moved_per_sample, 16 * 16 * 16 * 4.0 + 16 * 8 * 8 * 4.0 + 16 * 8 * 8 * 8.0);
  EXPECT_EQ(layer(layers, "layer2.0.conv1").parameter_bytes, 32 * 16 * 3 * 3 * 4);
}

// Who holds a saved tensor in forward besides its savers: the training loop
// holds the batch; a residual block holds its input to the add at its end.
TEST(LayerFacts, ResNetTinyLifetimes) {
  const auto layers = facts_of("resnet-tiny");
  EXPECT_TRUE(slot(layer(layers, "conv1"), "input").held_by_caller);
  EXPECT_FALSE(slot(layer(layers, "bn1"), "input").held_by_caller);
  EXPECT_EQ(slot(layer(layers, "bn1"), "input").last_forward_use, "bn1");  // conv1's output, gone once bn1 is done
  EXPECT_EQ(slot(layer(layers, "layer1.0.conv1"), "input").last_forward_use, "layer1.0.relu2");
}

}  // namespace
}  // namespace papaya::profiler
