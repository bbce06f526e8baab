// The kernel model's arithmetic by hand: a product's tiles, waves and split
// depth; fused attention's tiles; a memory pass's bytes and latency; the
// kernels read from a layer's description.
#include <gtest/gtest.h>

#include "model/catalog/kernel_model.h"
#include "model/catalog/layer_kernels.h"

namespace papaya::model {
namespace {

// Four SMs, every ceiling 1, no latency and memory so fast that only FLOPs
// count: each case below is a count of waves of one tile's FLOPs.
KernelModel four_sms() {
  KernelModel gpu;
  gpu.sm_count = 4;
  gpu.matmul_efficiency = {{"bf16", 1.0}};
  gpu.attention_forward_efficiency = 1;
  gpu.attention_backward_efficiency = 0.5;
  gpu.memory_efficiency = 1;
  gpu.kernel_latency_s = 0;
  return gpu;
}

constexpr double peak = 4e12;  // 1 TFLOP/s an SM
constexpr double fast = 1e30;  // bytes/s
const MatmulPath bf16{peak, 1.0, 2};

double tile_seconds(double tile_m, double tile_n, double k, double share = 1) {
  return 2 * tile_m * tile_n * k / (share * peak / 4);
}

TEST(KernelModel, AProductTakesWholeWavesOfItsFastestTile) {
  const KernelModel gpu = four_sms();
  // 256 x 256: four 128x128 tiles, one wave (256x128 tiles: two, but each twice as long).
  EXPECT_DOUBLE_EQ(matmul_seconds(gpu, bf16, 256, 256, 1024, fast), tile_seconds(128, 128, 1024));
  // One row more: 128x128 tiles need 6 (2 waves); 256x128 4 tiles of twice the work (the same);
  // 128x64 tiles 12 (3 waves of half a tile at 0.9 of the ceiling): the fastest.
  const double rows_257 = matmul_seconds(gpu, bf16, 257, 256, 1024, fast);
  EXPECT_DOUBLE_EQ(rows_257, 3 * tile_seconds(128, 64, 1024, 0.9));
  EXPECT_LT(rows_257, 2 * tile_seconds(128, 128, 1024));
  // The last, partly filled wave costs a whole one: 257 rows cost more than 256 by far more than 1/256.
  EXPECT_GT(rows_257 / matmul_seconds(gpu, bf16, 256, 256, 1024, fast), 1.5);
}

TEST(KernelModel, ADeepProductWithFewTilesSplitsItsDepth) {
  KernelModel gpu = four_sms();
  // 128 x 128 x 4096: one tile would leave three SMs idle; split four ways (1024 deep each) it
  // fills the wave, and its four fp32 partial sums are added in one more pass.
  const double split = tile_seconds(128, 128, 1024);
  EXPECT_DOUBLE_EQ(matmul_seconds(gpu, bf16, 128, 128, 4096, fast), split);
  const double bandwidth = 1e12;
  const double sums = 128.0 * 128 * 4 * (4 + 1) / bandwidth;  // read four parts, write one
  // 64x64 tiles (one wave of four, at 0.75) would take 4/3 of the split's compute.
  EXPECT_DOUBLE_EQ(matmul_seconds(gpu, bf16, 128, 128, 4096, bandwidth),
                   std::max(split + sums, 2.0 * (128 * 4096 + 4096 * 128 + 128 * 128) / bandwidth));
  gpu.sm_count = 0;  // unknown: the FLOPs alone
  EXPECT_DOUBLE_EQ(matmul_seconds(gpu, bf16, 128, 128, 4096, fast), 2.0 * 128 * 128 * 4096 / peak);
}

TEST(KernelModel, ASmallProductIsBoundByItsBytesAndLatency) {
  KernelModel gpu = four_sms();
  gpu.kernel_latency_s = 2e-6;
  gpu.memory_efficiency = 0.5;
  const double bandwidth = 1e9;  // slow memory: the bytes dominate
  const double bytes = 2.0 * (64 * 8 + 8 * 64 + 64 * 64);
  EXPECT_DOUBLE_EQ(matmul_seconds(gpu, bf16, 64, 64, 8, bandwidth), bytes / (bandwidth * 0.5) + 2e-6);
  // Batched: the heads' tiles share the waves; eight 128x128 products on four SMs are two waves.
  EXPECT_DOUBLE_EQ(batched_matmul_seconds(four_sms(), bf16, 8, 128, 128, 64, fast), 2 * tile_seconds(128, 128, 64));
}

TEST(KernelModel, FusedAttentionRunsTilesOfQueryRowsPerHead) {
  const KernelModel gpu = four_sms();
  // 2 heads x 300 tokens: ceil(300/128) = 3 tiles a head, 6 tiles, 2 waves on 4 SMs.
  const double flops = 6e9;
  EXPECT_DOUBLE_EQ(attention_seconds(gpu, flops, 2, 300, false, peak), 2 * (flops / 6) / (peak / 4));
  EXPECT_DOUBLE_EQ(attention_seconds(gpu, flops, 2, 300, true, peak), 2 * (flops / 6) / (0.5 * peak / 4));
}

TEST(KernelModel, AMemoryPassIsItsBytesAtTheBandwidthPlusALatency) {
  KernelModel gpu = four_sms();
  gpu.memory_efficiency = 0.8;
  gpu.kernel_latency_s = 3e-6;
  EXPECT_DOUBLE_EQ(memory_pass_seconds(gpu, 8e6, 1e12), 8e6 / 0.8e12 + 3e-6);
  EXPECT_DOUBLE_EQ(memory_pass_seconds(gpu, 0, 1e12), 3e-6);
}

LayerDescription linear_layer(int64_t rows, int64_t in, int64_t out, bool trained) {
  LayerDescription l;
  l.path = "fc";
  l.kind = LayerKind::linear;
  SavedTensorProfile input;
  input.slot = "input";
  input.sample_shape = {rows, in};
  input.numel_per_sample = static_cast<double>(rows * in);
  l.saved.push_back(input);
  l.forward_flops_per_sample = 2.0 * static_cast<double>(rows * in * out);
  l.parameter_bytes = 4 * in * out;
  l.frozen_bytes = trained ? 0 : l.parameter_bytes;
  return l;
}

TEST(LayerKernels, ALinearIsOneProductForwardAndTwoBackward) {
  const LayerKernels trained = layer_kernels(linear_layer(16, 64, 32, true));
  ASSERT_EQ(trained.forward.products.size(), 1u);
  const ProductWork& f = trained.forward.products[0];
  EXPECT_EQ(f.grows, BatchDimension::rows);
  EXPECT_DOUBLE_EQ(f.m, 16);
  EXPECT_DOUBLE_EQ(f.n, 32);
  EXPECT_DOUBLE_EQ(f.k, 64);
  ASSERT_EQ(trained.backward.products.size(), 2u);
  EXPECT_DOUBLE_EQ(trained.backward.products[0].n, 64);  // the input's gradient: rows x in x out
  EXPECT_DOUBLE_EQ(trained.backward.products[0].k, 32);
  EXPECT_EQ(trained.backward.products[1].grows, BatchDimension::depth);  // the weight's: out x in x rows
  EXPECT_DOUBLE_EQ(trained.backward.products[1].m, 32);
  EXPECT_DOUBLE_EQ(trained.backward.products[1].k, 16);
  // Frozen weights (a fine-tuned network's base): no weight gradient.
  EXPECT_EQ(layer_kernels(linear_layer(16, 64, 32, false)).backward.products.size(), 1u);
  // Its time is the products' at the batch: the rows grow with it.
  const KernelModel gpu = four_sms();
  EXPECT_DOUBLE_EQ(kernel_seconds(trained.forward, 8, gpu, bf16, fast), matmul_seconds(gpu, bf16, 128, 32, 64, fast));
}

// Under an FP8 recipe a linear of features in multiples of 16 runs its
// three products on the FP8 path, beside the casts of its operands: torchao
// casts input and weight forward (amax and cast: 2 + 2 + 1 bytes an input,
// 4 + 4 + 1 a weight) and the output's gradient twice, the input and weight
// again backward; Transformer Engine casts each once, its amax fused.
TEST(LayerKernels, AnFp8LinearRunsItsProductsInFp8BesideItsCasts) {
  const LayerDescription l = linear_layer(16, 64, 32, true);
  const double inputs = 16 * 64, outputs = 16 * 32, weights = 64 * 32;
  const LayerKernels torchao = layer_kernels(l, Fp8Recipe::tensorwise);
  for (const auto* d : {&torchao.forward, &torchao.backward}) {
    for (const ProductWork& p : d->products) EXPECT_TRUE(p.fp8);
  }
  EXPECT_DOUBLE_EQ(torchao.forward.pass_bytes_per_sample, 5 * inputs);
  EXPECT_DOUBLE_EQ(torchao.forward.pass_bytes_fixed, 9 * weights);
  EXPECT_DOUBLE_EQ(torchao.backward.pass_bytes_per_sample, 10 * outputs + 5 * inputs);
  EXPECT_DOUBLE_EQ(torchao.backward.pass_bytes_fixed, 9 * weights);
  const LayerKernels te = layer_kernels(l, Fp8Recipe::delayed);
  EXPECT_DOUBLE_EQ(te.forward.pass_bytes_per_sample, 3 * inputs);
  EXPECT_DOUBLE_EQ(te.forward.pass_bytes_fixed, 6 * weights);
  EXPECT_DOUBLE_EQ(te.backward.pass_bytes_per_sample, 3 * outputs);
  // Features not multiples of 16, and the LM head: no FP8.
  const LayerKernels odd = layer_kernels(linear_layer(16, 60, 32, true), Fp8Recipe::tensorwise);
  EXPECT_FALSE(odd.forward.products.front().fp8);
  EXPECT_EQ(odd.forward.pass_kernels, 1);
  LayerDescription head = l;
  head.kind = LayerKind::lm_head;
  EXPECT_FALSE(layer_kernels(head, Fp8Recipe::tensorwise).forward.products.front().fp8);
  // The products on the FP8 path where one is given.
  const KernelModel gpu = four_sms();
  const MatmulPath fp8{2 * peak, 1.0, 1};
  const double casts = memory_pass_seconds(gpu, 8 * 5 * inputs + 9 * weights, fast) + 4 * gpu.kernel_latency_s;
  EXPECT_DOUBLE_EQ(kernel_seconds(torchao.forward, 8, gpu, bf16, fast, fp8), matmul_seconds(gpu, fp8, 128, 32, 64, fast) + casts);
  EXPECT_LT(kernel_seconds(torchao.forward, 8, gpu, bf16, fast, fp8), kernel_seconds(torchao.forward, 8, gpu, bf16, fast));
}

TEST(LayerKernels, ALinearWhoseInputIsNotSavedIsPricedByItsFlops) {
  LayerDescription l = linear_layer(16, 64, 32, true);
  l.saved.clear();
  const LayerKernels k = layer_kernels(l);
  EXPECT_TRUE(k.forward.products.empty());
  EXPECT_DOUBLE_EQ(k.forward.unshaped_flops_per_sample, l.forward_flops_per_sample);
  EXPECT_DOUBLE_EQ(kernel_seconds(k.forward, 2, four_sms(), bf16, fast), 2 * l.forward_flops_per_sample / peak);
}

TEST(LayerKernels, AnActivationIsAMemoryPassAndAnEmbeddingsBackwardWritesItsTable) {
  LayerDescription act;
  act.kind = LayerKind::silu;
  act.forward_bytes_moved_per_sample = 1e6;
  const LayerKernels a = layer_kernels(act);
  EXPECT_DOUBLE_EQ(a.forward.pass_bytes_per_sample, 1e6);
  EXPECT_EQ(a.forward.pass_kernels, 1);
  EXPECT_DOUBLE_EQ(a.backward.pass_bytes_per_sample, 1.5e6);  // reads the input and the gradient, writes one
  LayerDescription emb;
  emb.kind = LayerKind::embedding;
  emb.parameter_bytes = 1 << 20;
  EXPECT_DOUBLE_EQ(layer_kernels(emb).backward.pass_bytes_fixed, 4.0 * (1 << 20));
  emb.frozen_bytes = emb.parameter_bytes;  // frozen: no gradient to write
  EXPECT_DOUBLE_EQ(layer_kernels(emb).backward.pass_bytes_fixed, 0);
}

TEST(LayerKernels, FusedAttentionTakesItsHeadsAndTokensFromQ) {
  LayerDescription l;
  l.kind = LayerKind::fused_attention;
  SavedTensorProfile q;
  q.slot = "q";
  q.sample_shape = {4, 256, 64};
  l.saved.push_back(q);
  l.forward_flops_per_sample = 1e9;
  const LayerKernels k = layer_kernels(l);
  EXPECT_DOUBLE_EQ(k.forward.attention_heads, 4);
  EXPECT_DOUBLE_EQ(k.forward.attention_query_tokens, 256);
  EXPECT_DOUBLE_EQ(k.backward.attention_flops_per_sample, 2.5e9);
  const KernelModel gpu = four_sms();
  // Batch 2: 2 x 4 heads x 2 tiles = 16 tiles, 4 waves.
  EXPECT_DOUBLE_EQ(kernel_seconds(k.forward, 2, gpu, bf16, fast), 4 * (2e9 / 16) / (peak / 4));
}

// Materialized attention's scores: one product a head (q·kᵀ forward; the
// gradients of q and k backward). Papaya's executor scales, masks and
// groups the scores in three passes each way (reading and writing them);
// Megatron-LM runs none of those, but repeats shared k/v heads to every
// query head: 8 query heads over 2 k heads read 2 heads' k and write 8.
TEST(LayerKernels, AttentionScoresArePassedOverAsEachEngineRunsThem) {
  LayerDescription l;
  l.kind = LayerKind::attention_scores;
  SavedTensorProfile q, k;
  q.slot = "q", k.slot = "k";
  q.sample_shape = {8, 128, 64};
  k.sample_shape = {2, 128, 64};
  q.element_size = k.element_size = 2;
  l.saved = {q, k};
  l.output_bytes_per_sample = 8 * 128 * 128 * 2;
  const LayerKernels papaya = layer_kernels(l);
  const LayerKernels megatron = layer_kernels(l, Fp8Recipe::none, Engine::megatron);
  for (const LayerKernels* both : {&papaya, &megatron}) {
    ASSERT_EQ(both->forward.products.size(), 1u);
    EXPECT_DOUBLE_EQ(both->forward.products[0].count, 8);
    EXPECT_DOUBLE_EQ(both->forward.products[0].n, 128);
    EXPECT_EQ(both->backward.products.size(), 2u);
  }
  EXPECT_EQ(papaya.forward.pass_kernels, 3);
  EXPECT_DOUBLE_EQ(papaya.forward.pass_bytes_per_sample, 3 * 2 * l.output_bytes_per_sample);
  EXPECT_DOUBLE_EQ(papaya.backward.pass_bytes_per_sample, 3 * 2 * l.output_bytes_per_sample);
  EXPECT_EQ(megatron.forward.pass_kernels, 1);
  EXPECT_DOUBLE_EQ(megatron.forward.pass_bytes_per_sample, (2 + 8) * 128 * 64 * 2);
  EXPECT_DOUBLE_EQ(megatron.backward.pass_bytes_per_sample, (2 + 8) * 128 * 64 * 2);
  // Every query head its own k head: nothing to repeat, no pass at all.
  l.saved[1].sample_shape[0] = 8;
  EXPECT_EQ(layer_kernels(l, Fp8Recipe::none, Engine::megatron).forward.pass_kernels, 0);
  EXPECT_EQ(layer_kernels(l, Fp8Recipe::none, Engine::megatron).backward.pass_kernels, 0);
}

}  // namespace
}  // namespace papaya::model
