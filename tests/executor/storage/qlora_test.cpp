// QLoRA (executor/storage/weight_codec.h): a frozen projection's weight
// stored in nf4, int8 or bf16 comes back as the formats define it, is
// priced as the model prices it, and trains the adapters as the fp32
// network with the loaded weights does.
#include <gtest/gtest.h>

#include <array>
#include <cmath>

#include "executor/data.h"
#include "executor/layers/dense.h"
#include "executor/networks/zoo.h"
#include "executor/optimizer.h"
#include "model/catalog/parameter_count.h"
#include "tests/executor/moms_fixture.h"

namespace papaya::executor {
namespace {

using model::WeightFormat;

// NormalFloat4's levels as the QLoRA paper publishes them (appendix E).
constexpr std::array<double, 16> kLevels = {-1.0,
                                            -0.6961928009986877,
                                            -0.5250730514526367,
                                            -0.39491748809814453,
                                            -0.28444138169288635,
                                            -0.18477343022823334,
                                            -0.09105003625154495,
                                            0.0,
                                            0.07958029955625534,
                                            0.16093020141124725,
                                            0.24611230194568634,
                                            0.33791524171829224,
                                            0.44070982933044006,
                                            0.5626170039176941,
                                            0.7229568362236023,
                                            1.0};

double nearest_level(double x) {
  double best = kLevels[0];
  for (double level : kLevels) best = std::fabs(x - level) < std::fabs(x - best) ? level : best;
  return best;
}

// Each weight is its block's nearest level times the block's absmax as
// stored (its int8 code, the step of its group of 256 and the mean), and
// that absmax is the block's own within half a step; 300 weights pad the
// last of 5 blocks.
TEST(WeightCodec, Nf4IsEachBlocksNearestLevelOfItsAbsmax) {
  torch::manual_seed(3);
  const torch::Tensor w = torch::randn({3, 100});
  const StoredWeight s = store_weight(w, WeightFormat::nf4);
  EXPECT_EQ(s.bytes(), model::stored_weight_bytes(3, 100, WeightFormat::nf4));
  EXPECT_EQ(s.bytes(), 5 * 32 + 5 + 4 + 4);
  const torch::Tensor loaded = load_weight(s, torch::kFloat);
  ASSERT_EQ(loaded.sizes(), w.sizes());
  const auto flat = w.flatten(), back = loaded.flatten();
  const double offset = s.scale_offset.item<double>(), step = s.scale_scales[0].item<double>();
  double spread = 0;
  std::vector<double> absmax(5, 0.0);
  for (int64_t i = 0; i < 300; ++i) absmax[i / 64] = std::max(absmax[i / 64], std::fabs(flat[i].item<double>()));
  for (double a : absmax) spread = std::max(spread, std::fabs(a - offset));
  for (int64_t b = 0; b < 5; ++b) {
    const double stored = s.scales[b].item<double>() * step + offset;
    EXPECT_LE(std::fabs(stored - absmax[b]), spread / 254 * (1 + 1e-6)) << "block " << b;
    for (int64_t i = 64 * b; i < std::min<int64_t>(300, 64 * (b + 1)); ++i) {
      const double expected = nearest_level(flat[i].item<double>() / absmax[b]) * stored;
      EXPECT_NEAR(back[i].item<double>(), expected, 1e-6 * absmax[b]) << "weight " << i;
    }
  }
}

// A weight of 17,188 blocks, coded and loaded 16,384 blocks at a time, is
// each block's nearest level of its stored absmax all through.
TEST(WeightCodec, Nf4CodesEveryPartOfALargeWeight) {
  torch::manual_seed(5);
  const torch::Tensor w = torch::randn({1100, 1000});
  const StoredWeight s = store_weight(w, WeightFormat::nf4);
  EXPECT_EQ(s.bytes(), model::stored_weight_bytes(1100, 1000, WeightFormat::nf4));
  const int64_t blocks = 1100 * 1000 / 64 + 1;
  const torch::Tensor padded = torch::cat({w.flatten(), torch::zeros({blocks * 64 - 1100 * 1000})}).view({blocks, 64});
  const torch::Tensor absmax = padded.abs().amax(1, /*keepdim=*/true);
  const torch::Tensor level = torch::tensor(std::vector<double>(kLevels.begin(), kLevels.end()), torch::kFloat);
  const torch::Tensor nearest = level.index_select(0, (padded / absmax).unsqueeze(-1).sub(level).abs().argmin(-1).flatten());
  const torch::Tensor groups = s.scale_scales.repeat_interleave(256).narrow(0, 0, blocks);
  const torch::Tensor stored = (s.scales.to(torch::kFloat) * groups + s.scale_offset).unsqueeze(1);
  const torch::Tensor expected = (nearest.view({blocks, 64}) * stored).flatten().narrow(0, 0, 1100 * 1000).view({1100, 1000});
  EXPECT_LT((load_weight(s, torch::kFloat) - expected).abs().max().item<double>(), 1e-6 * absmax.max().item<double>());
}

// int8: a code a weight, the row's absmax / 127 a row; bf16: a rounding.
TEST(WeightCodec, Int8RoundsEachRowToItsAbsmaxOver127AndBf16ToBf16) {
  torch::manual_seed(4);
  const torch::Tensor w = torch::randn({3, 100});
  const StoredWeight s = store_weight(w, WeightFormat::int8);
  EXPECT_EQ(s.bytes(), model::stored_weight_bytes(3, 100, WeightFormat::int8));
  EXPECT_EQ(s.bytes(), 300 + 3 * 4);
  const torch::Tensor rowmax = w.abs().amax(1, /*keepdim=*/true);
  EXPECT_TRUE(((load_weight(s, torch::kFloat) - w).abs() <= rowmax / 254 * (1 + 1e-6)).all().item<bool>());
  EXPECT_TRUE(torch::allclose(load_weight(s, torch::kFloat).abs().amax(1, true), rowmax));  // the largest is exact
  const StoredWeight half = store_weight(w, WeightFormat::bf16);
  EXPECT_EQ(half.bytes(), 600);
  EXPECT_TRUE(torch::equal(load_weight(half, torch::kFloat), w.to(torch::kBFloat16).to(torch::kFloat)));
}

// A scratch loads what load_weight loads, in fp32 and bf16, every format,
// the largest weight first and a smaller one into the same buffer after.
TEST(WeightCodec, AScratchLoadsAsLoadWeightIntoOneBuffer) {
  torch::manual_seed(6);
  const torch::Tensor large = torch::randn({1100, 1000}), small = torch::randn({30, 70});
  for (WeightFormat format : {WeightFormat::bf16, WeightFormat::int8, WeightFormat::nf4}) {
    LoadScratch scratch;
    for (auto dtype : {torch::kFloat, torch::kBFloat16}) {
      const StoredWeight big = store_weight(large, format), little = store_weight(small, format);
      const torch::Tensor first = scratch.load(big, dtype);
      EXPECT_TRUE(torch::equal(first, load_weight(big, dtype))) << to_string(format);
      const void* buffer = first.data_ptr();
      const torch::Tensor second = scratch.load(little, dtype);
      EXPECT_TRUE(torch::equal(second, load_weight(little, dtype))) << to_string(format);
      EXPECT_EQ(second.data_ptr(), buffer) << to_string(format);
      EXPECT_EQ(second.scalar_type(), dtype);
    }
    EXPECT_EQ(scratch.bytes(), 1100 * 1000 * 4) << to_string(format);
  }
}

// A stored Linear draws its weight a few rows at a time (3 chunks here):
// the values the fp32 Linear draws whole from the same seed, stored.
TEST(WeightCodec, AStoredLinearDrawsTheFp32LinearsWeight) {
  for (WeightFormat format : {WeightFormat::int8, WeightFormat::nf4}) {
    torch::manual_seed(9);
    const Linear exact(1000, 3000, true);
    torch::manual_seed(9);
    const Linear stored(1000, 3000, true, format);
    const StoredWeight expected = store_weight(exact.weight, format);
    EXPECT_TRUE(torch::equal(stored.stored_weight()->codes, expected.codes)) << to_string(format);
    EXPECT_TRUE(torch::equal(stored.stored_weight()->scales, expected.scales)) << to_string(format);
    EXPECT_TRUE(torch::equal(stored.bias, exact.bias)) << to_string(format);
  }
}

model::NetworkConfig qlora(WeightFormat format) {
  model::NetworkConfig config = model::load_network_config("llama-tiny-lora");
  model::LoraConfig lora = *config.transformer().lora;
  lora.base_weights = format;
  return model::with_lora(config, lora);
}

// Every block's seven projections store their weights; the network's static
// bytes are what the model prices from the config alone.
TEST(Qlora, AStoredBaseIsPricedAsTheModelPricesIt) {
  for (WeightFormat format : {WeightFormat::fp32, WeightFormat::bf16, WeightFormat::int8, WeightFormat::nf4}) {
    const model::NetworkConfig config = qlora(format);
    const auto network = build_network(config);
    int stored = 0;
    for (const Layer* layer : network->layers()) stored += layer->stored_weight() != nullptr;
    EXPECT_EQ(stored, format == WeightFormat::fp32 ? 0 : 7 * config.transformer().layers) << to_string(format);
    EXPECT_EQ(network->parameter_count(), model::parameter_count(config)) << to_string(format);
    EXPECT_EQ(network->trainable_parameter_count(), model::trainable_parameter_count(config)) << to_string(format);
    const auto optimizer = make_optimizer(*network, 1e-3, 0.01);
    EXPECT_DOUBLE_EQ(static_cast<double>(static_bytes(*network, *optimizer)), model::static_state_bytes(config))
        << to_string(format);
  }
}

// A mixture's experts under QLoRA: every expert's (and the shared
// expert's) projections stored, adapters where targeted, the router frozen
// in fp32; the static bytes are what the model prices from the config.
TEST(Qlora, AMixturesStoredExpertsArePricedAsTheModelPricesThem) {
  model::NetworkConfig config = model::load_network_config("qwen-moe-tiny");
  model::LoraConfig lora;
  lora.rank = 4;
  lora.targets = {"qkv", "gate", "up", "down"};
  for (WeightFormat format : {WeightFormat::fp32, WeightFormat::nf4}) {
    lora.base_weights = format;
    const model::NetworkConfig tuned = model::with_lora(config, lora);
    const auto network = build_network(tuned);
    const auto optimizer = make_optimizer(*network, 1e-3, 0.01);
    EXPECT_DOUBLE_EQ(static_cast<double>(static_bytes(*network, *optimizer)), model::static_state_bytes(tuned))
        << to_string(format);
    EXPECT_EQ(network->trainable_parameter_count(), model::trainable_parameter_count(tuned)) << to_string(format);
    const testing::Step step = testing::step(*network, make_synthetic_data(tuned, torch::kCPU, 1)->next(2));
    EXPECT_TRUE(std::isfinite(step.loss)) << to_string(format);
  }
}

// The stored network and the fp32 one built from the same seed, its
// adapters' B drawn non-zero in both (so that A has gradients).
struct Pair {
  std::shared_ptr<Network> stored, exact;
};

Pair pair_of(WeightFormat format) {
  torch::manual_seed(0);
  Pair p{build_network(qlora(format)), nullptr};
  torch::manual_seed(0);
  p.exact = build_network(qlora(WeightFormat::fp32));
  const torch::NoGradGuard no_grad;
  auto exact = p.exact->named_parameters();
  for (auto& param : p.stored->named_parameters()) {
    if (param.key().find("_lora_b") != std::string::npos) param.value().normal_(0, 0.1);
    exact[param.key()].copy_(param.value());
  }
  return p;
}

// The fp32 network's projection weights replaced by the stored ones, loaded.
void load_stored_weights(const Pair& p) {
  const torch::NoGradGuard no_grad;
  for (const Layer* layer : p.stored->layers()) {
    if (layer->stored_weight()) {
      dynamic_cast<Linear&>(*p.exact->find_layer(layer->path()))
          .weight.copy_(load_weight(*layer->stored_weight(), torch::kFloat));
    }
  }
}

// ||stored - fp32|| / ||fp32|| over every projection's weight.
double weight_error(const Pair& p) {
  double diff = 0, norm = 0;
  for (const Layer* layer : p.stored->layers()) {
    if (!layer->stored_weight()) continue;
    const torch::Tensor w = dynamic_cast<Linear&>(*p.exact->find_layer(layer->path())).weight;
    diff += (load_weight(*layer->stored_weight(), torch::kFloat) - w).pow(2).sum().item<double>();
    norm += w.pow(2).sum().item<double>();
  }
  return std::sqrt(diff / norm);
}

// What the stored path computes is the fp32 path on the loaded weights: the
// weight loaded again in backward is the forward's.
TEST(Qlora, TrainsAsTheFp32NetworkWithTheLoadedWeights) {
  const Pair p = pair_of(WeightFormat::nf4);
  load_stored_weights(p);
  const Batch batch = make_synthetic_data(p.stored->config(), torch::kCPU, 1)->next(3);
  const testing::Step stored = testing::step(*p.stored, batch), exact = testing::step(*p.exact, batch);
  EXPECT_NEAR(stored.loss, exact.loss, 1e-6 * std::fabs(exact.loss));
  ASSERT_EQ(stored.grads.size(), exact.grads.size());
  EXPECT_LT(testing::relative_error(stored, exact), 1e-5);
}

// Against the fp32 network's own weights, nf4's and int8's adapter
// gradients move from fp32's as much as bf16's do for its weight error,
// scaled by theirs (with room for the curvature): the error is the
// weights', not the path's.
TEST(Qlora, AdapterGradientsMoveAsTheWeightsErrorImplies) {
  const Pair half = pair_of(WeightFormat::bf16);
  const Batch batch = make_synthetic_data(half.exact->config(), torch::kCPU, 1)->next(3);
  const testing::Step exact = testing::step(*half.exact, batch);
  const double half_weights = weight_error(half),
               half_gradients = testing::relative_error(testing::step(*half.stored, batch), exact);
  ASSERT_GT(half_gradients, 0);
  for (WeightFormat format : {WeightFormat::int8, WeightFormat::nf4}) {
    const Pair p = pair_of(format);
    const double weights = weight_error(p), gradients = testing::relative_error(testing::step(*p.stored, batch), exact);
    EXPECT_GT(weights, half_weights) << to_string(format);
    EXPECT_LE(gradients, 4 * half_gradients * weights / half_weights)
        << to_string(format) << ": weights " << weights << " off, bf16's " << half_weights;
    EXPECT_GT(gradients, 0) << to_string(format);
  }
}

}  // namespace
}  // namespace papaya::executor
