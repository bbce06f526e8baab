// What-if hardware: the catalog entry of a profiled GPU, roofline efficiencies
// fitted on it and carried to another entry, and what a CPU profile assumes.
#include <gtest/gtest.h>

#include <algorithm>

#include "model/catalog/layer_kernels.h"
#include "model/error.h"
#include "model/fit/fit_profile.h"
#include "model/plan_space/predict.h"
#include "tests/support/synthetic_profile.h"

namespace papaya::model {
namespace {

MachineInfo gpu(const std::string& name, double gib) {
  MachineInfo m;
  m.device = "cuda:0";
  m.device_name = name;
  m.memory_bytes = static_cast<int64_t>(gib * 1073741824.0);
  return m;
}

std::string entry(const MachineInfo& m) {
  const auto e = catalog_entry_for(m);
  return e ? e->name : "-";
}

TEST(Target, FindsTheCatalogEntryOfAProfiledGpu) {
  EXPECT_EQ(entry(gpu("NVIDIA H100 80GB HBM3", 79.1)), "H100-SXM-80GB");
  EXPECT_EQ(entry(gpu("NVIDIA H100 PCIe", 79.1)), "H100-PCIe-80GB");
  EXPECT_EQ(entry(gpu("NVIDIA A100-SXM4-40GB", 39.4)), "A100-40GB");
  EXPECT_EQ(entry(gpu("NVIDIA A100-SXM4-80GB", 79.2)), "A100-80GB");
  EXPECT_EQ(entry(gpu("NVIDIA A10", 22)), "A10");
  EXPECT_EQ(entry(gpu("Tesla V100-SXM2-16GB", 15.8)), "V100-16GB");
  EXPECT_EQ(entry(gpu("NVIDIA GeForce RTX 4090", 23.6)), "RTX-4090");
  EXPECT_EQ(entry(gpu("NVIDIA H200", 139.8)), "H200");
  EXPECT_EQ(entry(gpu("NVIDIA RTX 6000 Ada Generation", 47.5)), "RTX-6000-Ada");  // not the other "rtx"
  EXPECT_EQ(entry(gpu("AMD Instinct MI300X", 191.5)), "MI300X");
  EXPECT_EQ(entry(gpu("AMD Instinct MI250X", 64)), "-");
  MachineInfo cpu;
  cpu.device = "cpu";
  cpu.device_name = "NVIDIA H100 80GB HBM3";  // a name alone does not make a GPU
  EXPECT_EQ(entry(cpu), "-");
}

// Layer times generated from a roofline on an H100 (fp32: 67 TFLOP/s, 3.35
// TB/s) with known efficiencies: the fit must find them, and carry them to
// an A100.
TEST(Target, RooflineEfficienciesCarryToAnotherGpu) {
  const double peak = 67e12, bandwidth = 3350e9;
  const double eta_c = 0.6, eta_m = 0.8, eta_c_back = 0.5, eta_m_back = 0.7;
  testing::ProfileSpec spec = testing::gpt_like(2);
  spec.device = "cuda:0";
  spec.device_name = "NVIDIA H100 80GB HBM3";
  spec.memory_bytes = 80LL << 30;
  spec.link_bytes_per_s = 5e10;
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    auto& l = spec.layers[i];
    // Alternate compute-bound and memory-bound layers so both efficiencies show.
    l.forward_flops_per_sample = i % 2 ? 4e9 : 1e6;
    l.forward_bytes_moved_per_sample = i % 2 ? 1e6 : 4e8;
    const double fwd =
        std::max(l.forward_flops_per_sample / (peak * eta_c), l.forward_bytes_moved_per_sample / (bandwidth * eta_m));
    const double bwd = std::max(2 * l.forward_flops_per_sample / (peak * eta_c_back),
                                2 * l.forward_bytes_moved_per_sample / (bandwidth * eta_m_back));
    l.forward_s = {0, fwd, 5e-6};
    l.backward_s = {0, bwd, 8e-6};
  }
  const ProfileFit fit = fit_profile(testing::make_profile(spec), "h100.json");
  ASSERT_TRUE(fit.model.roofline.has_value());
  EXPECT_EQ(fit.model.roofline->hardware, "H100-SXM-80GB");
  EXPECT_NEAR(fit.model.roofline->forward_compute, eta_c, 1e-6);
  EXPECT_NEAR(fit.model.roofline->forward_memory, eta_m, 1e-6);
  EXPECT_NEAR(fit.model.roofline->backward_compute, eta_c_back, 1e-6);
  EXPECT_NEAR(fit.model.roofline->backward_memory, eta_m_back, 1e-6);

  // On the profiled entry itself, the fitted curves; on an A100-40GB (fp32
  // 19.5 TFLOP/s, 1555 GB/s), the roofline with the same efficiencies.
  const HardwareSpec a100 = load_hardware("A100-40GB");
  const Target same = make_target(fit.model, "h100");
  EXPECT_TRUE(same.profiled);
  const Target other = make_target(fit.model, "A100-40GB");
  EXPECT_FALSE(other.profiled);
  EXPECT_TRUE(other.notes.empty() || std::none_of(other.notes.begin(), other.notes.end(),
                                                  [](const std::string& n) { return n.find("typical") != std::string::npos; }));
  EXPECT_DOUBLE_EQ(other.memory_bytes, a100.memory_bytes);
  EXPECT_DOUBLE_EQ(other.h2d_bytes_per_s, a100.h2d_bandwidth);
  const auto& l = fit.model.layers[1];
  const double expected = std::max(l.forward_flops_per_sample / (a100.peak_for("fp32") * eta_c),
                                   l.forward_bytes_moved_per_sample / (a100.memory_bandwidth * eta_m));
  EXPECT_NEAR(other.forward_seconds[1].at(64), 64 * expected + 5e-6, 1e-6 * (64 * expected));
  // The A100 is slower at everything here.
  const Plan keep = expand_plan_name("keep", fit.model.layout());
  EXPECT_LT(predict(fit.model, other, keep, 64).samples_per_s, predict(fit.model, same, keep, 64).samples_per_s);
}

TEST(Target, ACpuProfileIsCarriedToAGpuByTheKernelsItsLayersRunAndSaysSo) {
  const LayerModel m = fit_profile(testing::make_profile(testing::gpt_like(1)), "cpu.json").model;
  const Target cpu = make_target(m, "");
  EXPECT_TRUE(cpu.profiled);
  EXPECT_FALSE(cpu.gpu);
  EXPECT_FALSE(cpu.has_host_link());
  const Target h100 = make_target(m, "H100-SXM-80GB");
  EXPECT_TRUE(h100.gpu);
  EXPECT_TRUE(h100.has_host_link());
  const auto says = [&](const std::string& word) {
    return std::any_of(h100.notes.begin(), h100.notes.end(),
                       [&](const std::string& n) { return n.find(word) != std::string::npos; });
  };
  EXPECT_TRUE(says("layer times from the kernels they run on H100-SXM-80GB (132 SMs"));
  EXPECT_TRUE(says("512-byte"));
  // Each layer's time is its kernels' there, at any batch (not a line through the profiled ones).
  const HardwareSpec hw = load_hardware("H100-SXM-80GB");
  const MatmulPath path{hw.peak_for(m.precision), hw.kernels.matmul_efficiency_for(compute_path(m.precision)),
                        m.precision == "fp32" ? 4.0 : 2.0};
  for (size_t j = 0; j < m.layers.size(); ++j) {
    const LayerKernels work = layer_kernels(m.layers[j]);
    for (double b : {1.0, 3.0, 64.0}) {
      EXPECT_DOUBLE_EQ(h100.forward_seconds[j].at(b), kernel_seconds(work.forward, b, hw.kernels, path, hw.memory_bandwidth));
      EXPECT_DOUBLE_EQ(h100.backward_seconds[j].at(b), kernel_seconds(work.backward, b, hw.kernels, path, hw.memory_bandwidth));
    }
  }
  // Laid out for Megatron-LM, its layers are priced by the kernels it runs
  // (materialized attention's scale and mask fused), as a note says.
  const Target megatron = make_target(m, "H100-SXM-80GB", std::nullopt, Engine::megatron);
  EXPECT_TRUE(std::any_of(megatron.notes.begin(), megatron.notes.end(),
                          [](const std::string& n) { return n.find("scores as Megatron-LM runs them") != std::string::npos; }));
  for (size_t j = 0; j < m.layers.size(); ++j) {
    const LayerKernels work = layer_kernels(m.layers[j], Fp8Recipe::none, Engine::megatron);
    EXPECT_DOUBLE_EQ(megatron.forward_seconds[j].at(3), kernel_seconds(work.forward, 3, hw.kernels, path, hw.memory_bandwidth));
    EXPECT_DOUBLE_EQ(megatron.backward_seconds[j].at(3), kernel_seconds(work.backward, 3, hw.kernels, path, hw.memory_bandwidth));
  }
  EXPECT_FALSE(says("scores as Megatron-LM runs them"));
  // --compute-efficiency overrides it with the roofline at that efficiency.
  const Target given = make_target(m, "H100-SXM-80GB", 0.4);
  EXPECT_TRUE(std::any_of(given.notes.begin(), given.notes.end(),
                          [](const std::string& n) { return n.find("compute 0.4 as given") != std::string::npos; }));
  EXPECT_FALSE(given.forward_seconds[0].kernels);
  // Swap is priced on the target's link; the what-if rounds allocations up.
  const Plan keep = expand_plan_name("keep", m.layout());
  EXPECT_GE(predict(m, h100, keep, 8).peak_bytes, predict(m, cpu, keep, 8).peak_bytes);
  EXPECT_GT(predict(m, h100, expand_plan_name("swap", m.layout()), 8).host_bytes, 0);
}

TEST(Target, UnknownHardwareAndMissingPrecisionsAreInputErrors) {
  const LayerModel m = fit_profile(testing::make_profile(testing::gpt_like(1)), "cpu.json").model;
  EXPECT_THROW(make_target(m, "TPU-v9"), InputError);
  LayerModel bf16 = m;
  bf16.precision = "bf16";
  EXPECT_THROW(make_target(bf16, "V100-16GB"), InputError);  // no bf16 path
  EXPECT_NO_THROW(make_target(bf16, "A100-40GB"));
}

// A CPU can profile autocast only in bf16; its bytes are fp16's, so a chip
// without bf16 prices the matmuls at its fp16 peak and says so.
TEST(Target, AutocastInBf16IsPricedInFp16WhereThereIsNoBf16) {
  LayerModel amp = fit_profile(testing::make_profile(testing::gpt_like(1)), "cpu.json").model;
  amp.precision = "amp-bf16";
  const Target v100 = make_target(amp, "V100-16GB");
  EXPECT_TRUE(std::any_of(v100.notes.begin(), v100.notes.end(),
                          [](const std::string& n) { return n.find("V100-16GB has no bf16") != std::string::npos; }));
  LayerModel fp16 = amp;
  fp16.precision = "amp-fp16";
  const Plan keep = expand_plan_name("keep", amp.layout());
  EXPECT_DOUBLE_EQ(predict(amp, v100, keep, 8).samples_per_s,
                   predict(fp16, make_target(fp16, "V100-16GB"), keep, 8).samples_per_s);
  const Target h100 = make_target(amp, "H100-SXM-80GB");
  EXPECT_TRUE(std::none_of(h100.notes.begin(), h100.notes.end(),
                           [](const std::string& n) { return n.find("has no bf16") != std::string::npos; }));
}

// An FP8 recipe's linears run at the chip's FP8 peak (their products alone),
// the rest as autocast's: faster than amp-bf16 where the chip has FP8, an
// input error where it has none.
TEST(Target, Fp8RecipesPriceTheirLinearsAtTheFp8Peak) {
  LayerModel amp = fit_profile(testing::make_profile(testing::gpt_like(1)), "cpu.json").model;
  amp.precision = "amp-bf16";
  LayerModel fp8 = amp;
  fp8.precision = "fp8-tensorwise";
  EXPECT_THROW(make_target(fp8, "A100-40GB"), InputError);
  const Target h100 = make_target(fp8, "H100-SXM-80GB");
  EXPECT_TRUE(std::any_of(h100.notes.begin(), h100.notes.end(),
                          [](const std::string& n) { return n.find("H100-SXM-80GB's FP8 peak") != std::string::npos; }));
  const HardwareSpec hw = load_hardware("H100-SXM-80GB");
  const MatmulPath bf16{hw.peak_for("amp-bf16"), hw.kernels.matmul_efficiency_for("bf16"), 2.0};
  const MatmulPath fp8_path{hw.peak_for("fp8"), hw.kernels.matmul_efficiency_for("fp8"), 1.0};
  const Target amp_h100 = make_target(amp, "H100-SXM-80GB");
  int converted = 0;
  for (size_t j = 0; j < fp8.layers.size(); ++j) {
    const LayerKernels work = layer_kernels(fp8.layers[j], Fp8Recipe::tensorwise);
    converted += !work.forward.products.empty() && work.forward.products.front().fp8;
    EXPECT_DOUBLE_EQ(h100.forward_seconds[j].at(8),
                     kernel_seconds(work.forward, 8, hw.kernels, bf16, hw.memory_bandwidth, fp8_path));
    EXPECT_DOUBLE_EQ(amp_h100.forward_seconds[j].at(8),
                     kernel_seconds(layer_kernels(amp.layers[j]).forward, 8, hw.kernels, bf16, hw.memory_bandwidth));
  }
  EXPECT_GT(converted, 0);
  // Where the profiled machine is the target, its times are the emulation's, and it says so.
  const Target here = make_target(fp8, "");
  EXPECT_TRUE(std::any_of(here.notes.begin(), here.notes.end(),
                          [](const std::string& n) { return n.find("fp8-tensorwise ran as papaya's emulation") == 0; }));
  EXPECT_TRUE(std::none_of(amp_h100.notes.begin(), amp_h100.notes.end(),
                           [](const std::string& n) { return n.find("emulation") != std::string::npos; }));
}

TEST(Target, CodecDefaultsWhenTheProfileMeasuredNone) {
  testing::ProfileSpec spec = testing::gpt_like(1);
  spec.codecs.clear();
  const LayerModel m = fit_profile(testing::make_profile(spec), "cpu.json").model;
  const Target cpu = profiled_target(m);
  EXPECT_DOUBLE_EQ(cpu.codec(4).pack_bytes_per_s, default_cpu_codec_bytes_per_s);
  ASSERT_FALSE(cpu.notes.empty());
  EXPECT_NE(cpu.notes[0].find("no quantize/dequantize throughput"), std::string::npos);
  const Target h100 = make_target(m, "H100-SXM-80GB");
  EXPECT_DOUBLE_EQ(h100.codec(4).pack_bytes_per_s, load_hardware("H100-SXM-80GB").memory_bandwidth / default_codec_passes);
}

}  // namespace
}  // namespace papaya::model
