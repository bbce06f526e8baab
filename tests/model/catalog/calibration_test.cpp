// `papaya calibrate`'s fit: kernel times made by a kernel model of known
// figures give those figures back; the entry it writes loads as hardware.
#include <gtest/gtest.h>

#include "model/catalog/calibration.h"
#include "model/error.h"
#include "model/json_file.h"

namespace papaya::model {
namespace {

KernelModel known(int sm_count) {
  KernelModel k;
  k.sm_count = sm_count;
  k.matmul_efficiency = {{"bf16", 0.73}, {"fp32", 0.61}};
  k.attention_forward_efficiency = 0.52;
  k.attention_backward_efficiency = 0.37;
  k.memory_efficiency = 0.81;
  k.kernel_latency_s = 3.5e-6;
  return k;
}

// What a GPU following `gpu` exactly would measure for a sweep.
std::vector<KernelMeasurement> measured_by(const HardwareSpec& hw, const KernelModel& gpu) {
  std::vector<KernelMeasurement> out;
  out.push_back({KernelClass::tiny, "", 0, 0, 0, 0, 0, 0, 0, gpu.kernel_latency_s});
  for (double bytes : {4e6, 1.28e8, 5.12e8}) {
    KernelMeasurement m{KernelClass::memory_pass};
    m.bytes = bytes;
    m.seconds = memory_pass_seconds(gpu, bytes, hw.memory_bandwidth);
    out.push_back(m);
  }
  for (const char* path : {"bf16", "fp32"}) {
    const double element = std::string(path) == "fp32" ? 4 : 2;
    const MatmulPath p{hw.peak_for(path), gpu.matmul_efficiency.at(path), element};
    // Large enough to fill every SM without splitting k.
    for (double side : {4096.0, 8192.0, 6144.0}) {
      KernelMeasurement m{KernelClass::matmul, path};
      m.m = side, m.n = side, m.k = side;
      m.seconds = matmul_seconds(gpu, p, side, side, side, hw.memory_bandwidth);
      out.push_back(m);
    }
  }
  for (KernelClass kind : {KernelClass::attention_forward, KernelClass::attention_backward}) {
    for (double tokens : {1024.0, 4096.0}) {
      KernelMeasurement a{kind, "bf16"};
      a.batch_heads = 32, a.tokens = tokens, a.head_dim = 128;
      const bool back = kind == KernelClass::attention_backward;
      a.seconds = attention_seconds(gpu, causal_attention_flops(32, tokens, 128) * (back ? 2.5 : 1), 32, tokens, back,
                                    hw.peak_for("bf16"));
      out.push_back(a);
    }
  }
  return out;
}

TEST(Calibration, TimesMadeByKnownFiguresGiveThemBack) {
  const HardwareSpec h200 = load_hardware("H200");
  const KernelModel truth = known(h200.kernels.sm_count);
  const Calibration c = fit_kernel_model(h200, measured_by(h200, truth), "test sweep");
  EXPECT_NEAR(c.kernels.kernel_latency_s, truth.kernel_latency_s, 1e-15);
  EXPECT_NEAR(c.kernels.memory_efficiency, truth.memory_efficiency, 1e-9);
  EXPECT_NEAR(c.kernels.matmul_efficiency.at("bf16"), 0.73, 1e-9);
  EXPECT_NEAR(c.kernels.matmul_efficiency.at("fp32"), 0.61, 1e-9);
  EXPECT_NEAR(c.kernels.attention_forward_efficiency, 0.52, 1e-9);
  EXPECT_NEAR(c.kernels.attention_backward_efficiency, 0.37, 1e-9);
  EXPECT_EQ(c.kernels.sm_count, h200.kernels.sm_count);
  EXPECT_EQ(c.kernels.source, "test sweep");
  // tf32 and fp16 products were not measured: they keep the typical figures, and it says so.
  EXPECT_DOUBLE_EQ(c.kernels.matmul_efficiency_for("tf32"), typical_kernel_model(132).matmul_efficiency.at("tf32"));
  EXPECT_NE(std::find(c.typical.begin(), c.typical.end(), "tf32 products"), c.typical.end());
  EXPECT_EQ(std::find(c.typical.begin(), c.typical.end(), "bf16 products"), c.typical.end());
}

TEST(Calibration, AFigureNothingMeasuredKeepsTheTypicalOne) {
  const HardwareSpec a100 = load_hardware("A100-80GB");
  std::vector<KernelMeasurement> only_tiny = {{KernelClass::tiny, "", 0, 0, 0, 0, 0, 0, 0, 7e-6}};
  const Calibration c = fit_kernel_model(a100, only_tiny, "tiny only");
  EXPECT_DOUBLE_EQ(c.kernels.kernel_latency_s, 7e-6);
  EXPECT_DOUBLE_EQ(c.kernels.memory_efficiency, typical_kernel_model(108).memory_efficiency);
  EXPECT_NE(std::find(c.typical.begin(), c.typical.end(), "attention backward"), c.typical.end());
  EXPECT_THROW(fit_kernel_model(a100, {}, "nothing"), InputError);
}

TEST(Calibration, TheEntryItWritesLoadsAsHardwareWithItsFigures) {
  const HardwareSpec h200 = load_hardware("H200");
  const auto measured = measured_by(h200, known(132));
  const Calibration c = fit_kernel_model(h200, measured, "papaya calibrate, test");
  const nlohmann::json entry = calibrated_entry(hardware_entry_json("h200"), "my-h200", c, measured);
  EXPECT_EQ(entry.at("kernel_model").at("measurements").size(), measured.size());
  const std::string path = ::testing::TempDir() + "my-h200.json";
  write_json_file(path, entry);
  const HardwareSpec mine = load_hardware(path);  // validated against the catalog's schema
  EXPECT_EQ(mine.name, "my-h200");
  EXPECT_TRUE(mine.kernels_measured);
  EXPECT_DOUBLE_EQ(mine.memory_bandwidth, h200.memory_bandwidth);
  EXPECT_NEAR(mine.kernels.matmul_efficiency_for("bf16"), 0.73, 1e-9);
  EXPECT_NEAR(mine.kernels.kernel_latency_s, 3.5e-6, 1e-12);
  EXPECT_EQ(mine.kernels.source, "papaya calibrate, test");
}

}  // namespace
}  // namespace papaya::model
