#pragma once
// How long a GPU takes for one kernel, by its class: a matrix product by its
// shape (m, n, k), fused attention by its heads and tokens, a memory-bound
// pass by the bytes it moves. This is how a profile taken on a CPU (or on
// another GPU) is carried to a GPU of the catalog, layer by layer
// (layer_kernels.h); a profile taken on the GPU itself keeps its measured
// times.
//
//   matmul     the output is cut into tiles, one tile per streaming
//              multiprocessor (SM) at a time: the product takes
//              ceil(tiles / SMs) waves, each of one tile's 2·tile_m·tile_n·k
//              FLOPs at the SM's share of the peak times the dtype's
//              efficiency ceiling; never less than its operands' bytes at
//              the memory efficiency. As a GEMM library picks its kernel,
//              the tile (256x128 down to 64x64, the smaller ones at a lower
//              share of the ceiling) and a split of k over more tiles (its
//              partial sums added in one more pass) that take least time.
//              Small and skinny products still lose to the last, partly
//              filled wave and to their bytes.
//   attention  FlashAttention's way: a tile of 128 query rows of one head
//              per SM, over all the keys it attends; waves as above, at the
//              attention efficiency of each direction.
//   memory     bytes / (bandwidth · memory efficiency) + the kernel's
//              latency: the bandwidth a pass reaches grows with its size,
//              half of the ceiling at latency · bandwidth · efficiency bytes.
// Every kernel also pays `kernel_latency_s` (its launch and ramp on the GPU,
// the host keeping ahead).
#include <map>
#include <string>

namespace papaya::model {

struct KernelModel {
  int sm_count = 0;  // 0: unknown, products priced without waves
  // Of the peak, what large products reach, per compute path ("bf16", "fp32").
  std::map<std::string, double> matmul_efficiency;
  double attention_forward_efficiency = 0, attention_backward_efficiency = 0;
  double memory_efficiency = 0;  // of the bandwidth, a large pass
  double kernel_latency_s = 0;
  std::string source;  // where these figures come from

  // The ceiling for a compute path; the typical one where the entry has none.
  double matmul_efficiency_for(const std::string& path) const;
};

// The figures a catalog entry without its own measurements assumes, stated
// in docs/gpu-time.md with their sources.
KernelModel typical_kernel_model(int sm_count);

// The products' compute path on one GPU: its peak and the share large
// products reach, and the bytes of an operand's element.
struct MatmulPath {
  double peak_flops = 0;
  double efficiency = 0;
  double element_bytes = 0;
};

// Seconds of one product C[m x n] = A[m x k] B[k x n] (operands and result
// of path.element_bytes each) on a GPU of `bandwidth` bytes/s.
double matmul_seconds(const KernelModel& gpu, const MatmulPath& path, double m, double n, double k, double bandwidth);

// `count` independent products of one shape, as one batched kernel (the
// heads of unfused attention): their tiles share the waves.
double batched_matmul_seconds(const KernelModel& gpu, const MatmulPath& path, double count, double m, double n, double k,
                              double bandwidth);

// Fused attention's forward or backward: `flops` in all over `batch_heads`
// (batch x heads) times ceil(query_tokens / 128) tiles of query rows.
double attention_seconds(const KernelModel& gpu, double flops, double batch_heads, double query_tokens, bool backward,
                         double peak_flops);

// A memory-bound kernel moving `bytes` (read and written).
double memory_pass_seconds(const KernelModel& gpu, double bytes, double bandwidth);

}  // namespace papaya::model
