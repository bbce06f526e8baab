// `papaya calibrate`'s sweep, run on the CPU at tiny sizes: what a GPU's
// would time, each kernel timed, fitted and written as an entry that
// --hardware FILE reads and prices a network with. (The figures a CPU gives
// mean nothing for a GPU; the command itself refuses a CPU.)
#include <gtest/gtest.h>

#include "model/catalog/calibration.h"
#include "model/catalog/target.h"
#include "model/json_file.h"
#include "profiler/kernel_sweep.h"

namespace papaya::profiler {
namespace {

TEST(KernelSweep, PlansEveryKernelClassOfAGpuSweep) {
  const auto planned = planned_sweep(SweepSize{});
  const auto count = [&](model::KernelClass kind) {
    return std::count_if(planned.begin(), planned.end(), [&](const auto& m) { return m.kind == kind; });
  };
  EXPECT_EQ(count(model::KernelClass::tiny), 1);
  EXPECT_EQ(count(model::KernelClass::memory_pass), 6);       // 1 MiB to 1 GiB copied, by 4
  EXPECT_EQ(count(model::KernelClass::matmul), 2 * (5 + 3));  // bf16 and fp32: 512-8192 square, three skinny
#if TORCH_VERSION_MAJOR >= 2
  EXPECT_EQ(count(model::KernelClass::attention_forward), 4);
#else
  EXPECT_EQ(count(model::KernelClass::attention_forward), 0);  // no fused attention in LibTorch 1.13
#endif
}

TEST(KernelSweep, ATinySweepOnTheCpuTimesFitsAndWritesAnEntry) {
  const SweepSize tiny{64, 4.0 * (1 << 20), 64, 2};
  int calls = 0;
  const auto measured = run_sweep(torch::Device(torch::kCPU), planned_sweep(tiny), tiny, [&](int done, int total) {
    ++calls;
    EXPECT_EQ(done, calls);
    EXPECT_GE(total, done);
  });
  EXPECT_EQ(static_cast<size_t>(calls), measured.size());
  for (const auto& m : measured) EXPECT_GT(m.seconds, 0) << model::to_string(m.kind);
  const model::HardwareSpec h200 = model::load_hardware("H200");
  const model::Calibration fitted = model::fit_kernel_model(h200, measured, "a CPU, in a test");
  const std::string path = ::testing::TempDir() + "swept.json";
  model::write_json_file(path, model::calibrated_entry(model::hardware_entry_json("H200"), "swept", fitted, measured));
  const model::HardwareSpec swept = model::load_hardware(path);
  EXPECT_TRUE(swept.kernels_measured);
  EXPECT_DOUBLE_EQ(swept.kernels.kernel_latency_s, fitted.kernels.kernel_latency_s);
  EXPECT_GT(swept.kernels.kernel_latency_s, 0);
}

}  // namespace
}  // namespace papaya::profiler
