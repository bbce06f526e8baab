// On a CUDA device: a TorchScript archive (a user's network) trained and
// profiled there as papaya's own networks are. Skipped without one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "executor/data.h"
#include "executor/layout_probe.h"
#include "executor/networks/source_for.h"
#include "executor/storage/rounding.h"
#include "executor/storage/stored_bytes.h"
#include "executor/torchscript/imported_network.h"
#include "model/plan.h"
#include "profiler/profiler.h"
#include "tests/executor/moms_fixture.h"
#include "tests/executor/torchscript/fixtures.h"

namespace papaya::executor {
namespace {

// The archive of the residual CNN fixture, removed when the test ends.
struct CnnArchive {
  CnnArchive() : path(torchscript::testing::saved(torchscript::testing::small_cnn(), "cuda-cnn")) {}
  ~CnnArchive() { std::remove(path.c_str()); }
  model::NetworkConfig config() const { return torchscript::archive_config(path, {"float32[B,3,8,8]"}, "--input", std::nullopt); }
  std::string path;
};

// Moved to the GPU, the network finds its layers' slots again (cuDNN saves
// other tensors than the CPU's kernels), and swapped tensors come back bit
// for bit through the pack hook: swap's gradients are keep's,
// quantize-4+swap's quantize-4's, and nothing swapped stays on the device.
TEST(CudaImported, SwapGivesTheGradientsOfTheSameStepUnswapped) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const CnnArchive archive;
  const model::NetworkConfig config = archive.config();
  const auto build = [&](const std::string& plan, torch::Device device) {
    torch::manual_seed(0);
    auto network = source_for(config)->build();
    network->to(device);
    const auto layout = probe_layout(*network);
    apply_plan(*network, model::load_plan(plan, layout, config.name), layout);
    return network;
  };
  const Batch on_cpu = make_synthetic_data(config, torch::kCPU, 1)->next(4);
  const Batch on_gpu = make_synthetic_data(config, torch::kCUDA, 1)->next(4);
  ASSERT_TRUE(torch::equal(on_gpu.input.cpu(), on_cpu.input));
  for (const auto& [plain, swapped] :
       std::vector<std::pair<std::string, std::string>>{{"keep", "swap"}, {"quantize-4", "quantize-4+swap"}}) {
    seed_rounding(3);
    const auto exact = testing::step(*build(plain, torch::kCUDA), on_gpu);
    seed_rounding(3);
    const auto again = testing::step(*build(swapped, torch::kCUDA), on_gpu);
    EXPECT_TRUE(testing::identical(again, exact)) << swapped;
    EXPECT_TRUE(std::isfinite(exact.loss)) << plain;

    auto network = build(swapped, torch::kCUDA);
    StoredBytesRecorder recorder;
    {
      const StoredBytesGuard guard(&recorder);
      network->loss(on_gpu);
    }
    ASSERT_TRUE(recorder.bytes().count(swapped)) << swapped;
    EXPECT_EQ(recorder.bytes().at(swapped), 0) << swapped;
  }
}

// Each module timed on the GPU (CUPTI, or the synchronized clock), forward
// and backward, within the step.
TEST(CudaImported, ProfilesEveryModule) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const CnnArchive archive;
  profiler::ProfileOptions options;
  options.network = archive.config();
  options.batches = {2, 8};
  options.device = "cuda";
  options.warmup = 1;
  options.steps = 3;
  const model::Profile p = profiler::profile_network(options);
  ASSERT_FALSE(p.layers.empty());
  for (size_t i = 0; i < p.batches.size(); ++i) {
    double layers = 0;
    for (const auto& l : p.layers) {
      EXPECT_GT(l.measured[i].forward_s, 0) << l.path;
      EXPECT_GT(l.measured[i].backward_s, 0) << l.path;
      layers += l.measured[i].forward_s + l.measured[i].backward_s;
    }
    EXPECT_LT(layers, p.iterations[i].iteration_s);
    EXPECT_GT(p.iterations[i].peak_bytes, p.iterations[i].static_bytes);
  }
}

}  // namespace
}  // namespace papaya::executor
