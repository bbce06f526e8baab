// On a CUDA device: the profiler's figures (layer times from CUPTI or the
// synchronized wall clock, the caching allocator's bytes, the host links).
// Skipped without one.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "executor/memory.h"
#include "model/catalog/network_config.h"
#include "profiler/profiler.h"
#include "profiler/summary.h"

namespace papaya::profiler {
namespace {

// On a GPU: CUPTI (or the synchronized wall clock) times the layers.
TEST(Profiler, ProfilesOnCuda) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device (or a CPU-only LibTorch)";
  ProfileOptions options;
  options.network = model::load_network_config("gpt-tiny");
  options.batches = {1, 8};
  options.device = "cuda";
  options.warmup = 1;
  options.steps = 3;
  const model::Profile p = profile_network(options);
  EXPECT_EQ(p.machine.device, "cuda:0");
  EXPECT_FALSE(p.machine.cuda_version.empty());
  EXPECT_GT(p.h2d_bytes_per_s, 1e8);
  EXPECT_GT(p.d2h_bytes_per_s, 1e8);
  // cuBLAS's workspace, which the caching allocator keeps after the first
  // product, is a fixed part of the activations on a GPU: compare the growth.
  const auto activations = [&](size_t i) {
    return static_cast<double>(p.iterations[i].forward_end_bytes - p.iterations[i].static_bytes);
  };
  const double growth = activations(1) - activations(0);
  EXPECT_NEAR(saved_bytes(p, 8) - saved_bytes(p, 1), growth, 0.05 * growth);
  for (size_t i = 0; i < p.batches.size(); ++i) {
    const auto& it = p.iterations[i];
    EXPECT_GT(it.peak_reserved_bytes, 0);
    EXPECT_GE(it.peak_reserved_bytes, it.peak_bytes);
    double layers = 0;
    for (const auto& l : p.layers) {
      EXPECT_GT(l.measured[i].forward_s, 0) << l.path;
      EXPECT_GT(l.measured[i].backward_s, 0) << l.path;
      layers += l.measured[i].forward_s + l.measured[i].backward_s;
    }
    EXPECT_LT(layers, it.iteration_s);
  }
}

// Batches measured in turn, each after the others' blocks were cached: what
// every layer holds at its forward's start lies on one line in the batch,
// to the byte. The caching allocator's blocks do not (a smaller batch takes
// a larger one's cached block whole when it is up to 1 MiB too large, and
// each block is rounded up to 512 bytes): a profile counts the tensors'
// own bytes.
TEST(Profiler, CudaBytesLieOnALineInTheBatchWhateverRanBefore) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device (or a CPU-only LibTorch)";
  ProfileOptions options;
  options.network = model::load_network_config("llama-tiny");
  options.batches = {1, 2, 4};
  options.device = "cuda";
  options.warmup = 1;
  options.steps = 3;
  options.rounds = 3;
  options.probe_batch = 0;
  const model::Profile p = profile_network(options);
  for (const auto& l : p.layers) {
    const auto at = [&](size_t i) { return l.measured[i].forward_start_bytes; };
    EXPECT_EQ(at(2) - at(1), 2 * (at(1) - at(0))) << l.path;
  }
}

// A tensor of 100 floats: the caching allocator holds a block of 512 bytes
// for it, the tensor itself is 400 (what a profile scaled to another shape
// counts: the blocks' rounding is no polynomial of the shape).
TEST(MemoryTracker, CountsTheAllocatorsBlocksOrTheTensorsOwnBytes) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device (or a CPU-only LibTorch)";
  const c10::Device cuda("cuda:0");
  executor::MemoryTracker blocks(cuda), tensors(cuda, executor::Counted::tensor_bytes);
  const int64_t blocks_before = blocks.current(), tensors_before = tensors.current();
  {
    const torch::Tensor hundred = torch::empty({100}, torch::TensorOptions().device(cuda));
    EXPECT_EQ(blocks.current() - blocks_before, 512);
    EXPECT_EQ(tensors.current() - tensors_before, 400);
    EXPECT_EQ(tensors.peak() - tensors_before, 400);
  }
  EXPECT_EQ(tensors.current(), tensors_before);
  tensors.reset_peak();
  EXPECT_EQ(tensors.peak(), tensors_before);
}

}  // namespace
}  // namespace papaya::profiler
