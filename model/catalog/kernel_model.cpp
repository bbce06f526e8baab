#include "model/catalog/kernel_model.h"

#include <algorithm>
#include <cmath>

namespace papaya::model {
namespace {

// The time of `tiles` tiles of `tile_flops` each over the GPU's SMs at
// `efficiency` of `peak_flops`: whole waves, the last one as long as a full
// one. Without a known SM count, the FLOPs alone.
double waves_seconds(const KernelModel& gpu, double tiles, double tile_flops, double efficiency, double peak_flops) {
  if (gpu.sm_count <= 0) return tiles * tile_flops / (efficiency * peak_flops);
  const double sms = gpu.sm_count;
  return std::ceil(tiles / sms) * tile_flops / (efficiency * peak_flops / sms);
}

}  // namespace

double KernelModel::matmul_efficiency_for(const std::string& path) const {
  const auto it = matmul_efficiency.find(path);
  if (it != matmul_efficiency.end()) return it->second;
  const auto typical = typical_kernel_model(sm_count).matmul_efficiency;
  const auto known = typical.find(path);
  return known != typical.end() ? known->second : typical.at("bf16");
}

KernelModel typical_kernel_model(int sm_count) {
  KernelModel k;
  k.sm_count = sm_count;
  k.matmul_efficiency = {{"fp32", 0.8}, {"tf32", 0.8}, {"bf16", 0.8}, {"fp16", 0.8}};
  k.attention_forward_efficiency = 0.6;
  k.attention_backward_efficiency = 0.5;
  k.memory_efficiency = 0.9;
  k.kernel_latency_s = 2e-6;
  k.source = "papaya's typical figures (docs/gpu-time.md)";
  return k;
}

double batched_matmul_seconds(const KernelModel& gpu, const MatmulPath& path, double count, double m, double n, double k,
                              double bandwidth) {
  if (count <= 0 || m <= 0 || n <= 0 || k <= 0) return 0;
  // Output tiles and their share of the ceiling: smaller tiles reuse each
  // operand's bytes less.
  struct Tile {
    double m, n, share;
  };
  static const Tile tiles[] = {{256, 128, 1}, {128, 256, 1}, {128, 128, 1}, {128, 64, 0.9}, {64, 128, 0.9}, {64, 64, 0.75}};
  constexpr double min_split_depth = 256;  // each part of a split k keeps at least this much of it
  double best = -1;
  for (const Tile& t : tiles) {
    const double output_tiles = count * std::ceil(m / t.m) * std::ceil(n / t.n);
    for (double split = 1; split == 1 || k / split >= min_split_depth; split *= 2) {
      double seconds = waves_seconds(gpu, output_tiles * split, 2.0 * t.m * t.n * std::ceil(k / split), path.efficiency * t.share,
                                     path.peak_flops);
      if (split > 1) seconds += memory_pass_seconds(gpu, count * m * n * 4 * (split + 1), bandwidth);  // fp32 partial sums
      if (best < 0 || seconds < best) best = seconds;
      if (gpu.sm_count <= 0 || output_tiles * split >= gpu.sm_count) break;  // more parts only add the sums
    }
  }
  const double bytes = count * path.element_bytes * (m * k + k * n + m * n);
  return std::max(best, bytes / (bandwidth * gpu.memory_efficiency)) + gpu.kernel_latency_s;
}

double matmul_seconds(const KernelModel& gpu, const MatmulPath& path, double m, double n, double k, double bandwidth) {
  return batched_matmul_seconds(gpu, path, 1, m, n, k, bandwidth);
}

double attention_seconds(const KernelModel& gpu, double flops, double batch_heads, double query_tokens, bool backward,
                         double peak_flops) {
  if (flops <= 0) return 0;
  const double tiles = std::max(1.0, batch_heads * std::ceil(query_tokens / 128));
  const double efficiency = backward ? gpu.attention_backward_efficiency : gpu.attention_forward_efficiency;
  return waves_seconds(gpu, tiles, flops / tiles, efficiency, peak_flops) + gpu.kernel_latency_s;
}

double memory_pass_seconds(const KernelModel& gpu, double bytes, double bandwidth) {
  return std::max(0.0, bytes) / (bandwidth * gpu.memory_efficiency) + gpu.kernel_latency_s;
}

}  // namespace papaya::model
