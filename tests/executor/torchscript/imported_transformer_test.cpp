// A small transformer archive (testing::small_transformer): a module called
// twice, attention ops between layers, blocks as segments, a forward that
// returns its own loss from two arguments; trained under recompute and
// quantize plans against the archive run as it is.
#include <gtest/gtest.h>

#include <cstdio>

#include "executor/data.h"
#include "executor/layout_probe.h"
#include "executor/networks/source_for.h"
#include "executor/storage/stored_bytes.h"
#include "executor/torchscript/archive.h"
#include "executor/torchscript/imported_network.h"
#include "tests/executor/moms_fixture.h"
#include "tests/executor/torchscript/fixtures.h"

namespace papaya::executor::torchscript {
namespace {

// The archive of testing::small_transformer(true), removed when the test ends.
struct LanguageModelArchive {
  LanguageModelArchive() : path((torch::manual_seed(0), testing::saved(testing::small_transformer(true), "language-model"))) {}
  ~LanguageModelArchive() { std::remove(path.c_str()); }
  model::NetworkConfig config() const {
    return archive_config(path, {"int64[B,6]<16", "int64[B,6]<16"}, "--input", std::nullopt);
  }
  std::string path;
};

TEST(ImportedTransformer, ANormRunTwiceIsTwoLayersAndTheBlocksAreSegments) {
  const std::string path = testing::saved(testing::small_transformer(), "transformer");
  const auto network = source_for(archive_config(path, {"int64[B,6]<16"}, "--input", std::nullopt))->build();
  std::remove(path.c_str());
  std::vector<std::string> paths;
  for (const auto* layer : network->layers()) paths.push_back(layer->path());
  const std::vector<std::string> block{"norm", "attn.qkv", "attn.proj", "norm#2", "fc1", "gelu", "fc2"};
  std::vector<std::string> expected{"embed"};
  for (const std::string b : {"blocks.b0.", "blocks.b1."}) {
    for (const auto& layer : block) expected.push_back(b + layer);
  }
  expected.insert(expected.end(), {"norm", "head"});
  EXPECT_EQ(paths, expected);
  ASSERT_EQ(network->segments().size(), 2u);
  EXPECT_EQ(network->segments()[1]->path(), "blocks.b1");
  EXPECT_EQ(network->find_layer("blocks.b1.norm#2")->segment(), "blocks.b1");
  EXPECT_EQ(dynamic_cast<const ImportedNetwork&>(*network).loss_kind(), LossKind::cross_entropy);  // [B, T, V] logits
}

// The forward's own loss is the loss, its gradients the archive's.
TEST(ImportedTransformer, AForwardThatReturnsItsLossTrainsAsTheArchive) {
  const LanguageModelArchive archive;
  const model::NetworkConfig config = archive.config();
  const auto keep = executor::testing::planned(config, "keep");
  EXPECT_EQ(dynamic_cast<const ImportedNetwork&>(*keep.network).loss_kind(), LossKind::output);
  const Batch batch = make_synthetic_data(config, torch::kCPU, 1)->next(3);
  ASSERT_EQ(batch.arguments.size(), 2u);
  const executor::testing::Step ours = executor::testing::step(*keep.network, batch);

  torch::jit::Module plain = load_archive(archive.path).module;
  const torch::Tensor loss = plain.forward({batch.arguments[0], batch.arguments[1]}).toTensor();
  loss.backward();
  EXPECT_EQ(ours.loss, loss.item<double>());
  std::vector<torch::Tensor> theirs;
  for (const auto& p : plain.parameters()) theirs.push_back(p.grad());
  ASSERT_EQ(ours.grads.size(), theirs.size());
  size_t i = 0;
  for (const auto& p : keep.network->parameters()) EXPECT_TRUE(torch::equal(p.grad(), theirs[i++])) << "parameter " << i;
}

// Recomputed blocks give keep's gradients bit for bit. Quantized, the
// gradients move, and by the step of the codec: 8 bits round to steps 85
// times finer than 2 bits (255 levels against 3), so that their error is
// far below 2 bits' (an eighth of it here, a wide margin).
TEST(ImportedTransformer, RecomputeIsExactAndQuantizedGradientsAreClose) {
  const LanguageModelArchive archive;
  const model::NetworkConfig config = archive.config();
  const Batch batch = make_synthetic_data(config, torch::kCPU, 2)->next(4);
  const auto keep = executor::testing::planned(config, "keep");
  const auto exact = executor::testing::step(*keep.network, batch);
  const auto recomputed = executor::testing::planned(config, executor::testing::recompute_segments(keep.layout));
  EXPECT_TRUE(executor::testing::identical(executor::testing::step(*recomputed.network, batch), exact));

  const auto q8 = executor::testing::step(*executor::testing::planned(config, "quantize-8").network, batch);
  const auto q2 = executor::testing::step(*executor::testing::planned(config, "quantize-2").network, batch);
  const double q8_error = executor::testing::relative_error(q8, exact), q2_error = executor::testing::relative_error(q2, exact);
  EXPECT_GT(q8_error, 0);
  EXPECT_LT(q8_error, q2_error / 8) << "8 bits " << q8_error << ", 2 bits " << q2_error;
}

// The GELU module alone is recognised as the zoo's gelu: inverted, it
// stores a 1-bit mask of its input (its output is the next layer's input,
// stored there once) and its gradients are keep's within the inverse's
// precision (as the zoo's, executor/moms_test.cpp). A GELU with more in its
// forward, or the tanh approximation, stays a module.
TEST(ImportedTransformer, AGeluModuleIsInvertedAsTheZoosGelu) {
  const LanguageModelArchive archive;
  const model::NetworkConfig config = archive.config();
  const auto keep = executor::testing::planned(config, "keep");
  EXPECT_EQ(keep.network->find_layer("blocks.b0.gelu")->kind(), model::LayerKind::gelu);
  EXPECT_EQ(keep.network->find_layer("blocks.b0.norm")->kind(), model::LayerKind::module);
  const Batch batch = make_synthetic_data(config, torch::kCPU, 3)->next(4);
  const auto exact = executor::testing::step(*keep.network, batch);
  const auto inverted = executor::testing::planned(config, "invert");
  EXPECT_LT(executor::testing::relative_error(executor::testing::step(*inverted.network, batch), exact), 1e-4);
  StoredBytesRecorder recorder;
  {
    const StoredBytesGuard guard(&recorder);
    inverted.network->loss(batch);
  }
  EXPECT_EQ(recorder.bytes().at("invert"), 2 * 4 * 6 * 16 / 8) << "two blocks' masks, one bit a value of [4, 6, 16]";

  for (const std::string body : {"torch.gelu(x, approximate='tanh')", "torch.gelu(x) * 2.0", "torch.silu(x + 1.0)"}) {
    torch::jit::Module act("Act");
    act.define("def forward(self, x):\n  return " + body + "\n");
    torch::jit::Module top("Net");
    top.register_module("a", testing::linear("Linear", 3, 3, true));
    top.register_module("act", act);
    top.define("def forward(self, x):\n  return self.act.forward(self.a.forward(x)).sum()\n");
    const std::string path = testing::saved(top, "not-an-activation");
    const auto network = source_for(archive_config(path, {"float32[B,3]"}, "--input", std::nullopt))->build();
    std::remove(path.c_str());
    EXPECT_EQ(network->find_layer("act")->kind(), model::LayerKind::module) << body;
  }
}

}  // namespace
}  // namespace papaya::executor::torchscript
