#include <gtest/gtest.h>

#include "model/catalog/hardware.h"
#include "model/error.h"
#include "model/json_file.h"

namespace papaya::model {
namespace {

TEST(Hardware, CatalogHasTheListedAccelerators) {
  std::vector<std::string> names;
  for (const auto& h : hardware_catalog()) names.push_back(h.name);
  for (const char* expected : {"K80", "P100-PCIe-16GB", "V100-16GB", "T4", "A10", "A40", "L4", "L40S", "RTX-4090", "RTX-6000-Ada",
                               "A100-40GB", "A100-80GB", "H100-PCIe-80GB", "H100-SXM-80GB", "H200", "B200", "MI300X"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
}

TEST(Hardware, EveryFigureHasASource) {
  for (const auto& h : hardware_catalog()) {
    for (const char* figure : {"memory", "memory_bandwidth", "peak_tflops", "host_link"}) {
      ASSERT_TRUE(h.sources.count(figure)) << h.name << " " << figure;
      EXPECT_FALSE(h.sources.at(figure).empty());
    }
    EXPECT_GT(h.memory_bytes, 0);
    EXPECT_GT(h.h2d_bandwidth, 0);
  }
}

TEST(Hardware, EveryEntryHasItsSmCountAndTheTypicalKernelFigures) {
  for (const auto& h : hardware_catalog()) {
    EXPECT_GT(h.kernels.sm_count, 0) << h.name;
    EXPECT_FALSE(h.sources.at("sm_count").empty()) << h.name;
    EXPECT_FALSE(h.kernels_measured) << h.name;
    EXPECT_GT(h.kernels.memory_efficiency, 0) << h.name;
  }
  EXPECT_EQ(load_hardware("H100-SXM-80GB").kernels.sm_count, 132);
  EXPECT_EQ(load_hardware("A100-80GB").kernels.sm_count, 108);
}

// What `papaya calibrate` writes: an entry with its measured kernel figures,
// which --hardware FILE.json prices with.
TEST(Hardware, AnEntryFileWithMeasuredKernelFiguresLoads) {
  nlohmann::json doc = read_json_file(config_dir() + "/hardware/H200.json", "hardware entry");
  doc["name"] = "my-gpu";
  doc["kernel_model"] = {{"matmul_efficiency", {{"bf16", 0.71}, {"fp32", 0.66}}},
                         {"attention_efficiency", {{"forward", 0.55}, {"backward", 0.4}}},
                         {"memory_efficiency", 0.83},
                         {"kernel_latency_us", 2.5},
                         {"source", "papaya calibrate, 2026-11-29"}};
  const std::string path = ::testing::TempDir() + "my-gpu.json";
  write_json_file(path, doc);
  const HardwareSpec h = load_hardware(path);
  EXPECT_EQ(h.name, "my-gpu");
  EXPECT_TRUE(h.kernels_measured);
  EXPECT_EQ(h.kernels.sm_count, 132);
  EXPECT_DOUBLE_EQ(h.kernels.matmul_efficiency_for("bf16"), 0.71);
  EXPECT_DOUBLE_EQ(h.kernels.matmul_efficiency_for("tf32"), typical_kernel_model(132).matmul_efficiency.at("tf32"));
  EXPECT_DOUBLE_EQ(h.kernels.attention_backward_efficiency, 0.4);
  EXPECT_DOUBLE_EQ(h.kernels.kernel_latency_s, 2.5e-6);
  EXPECT_EQ(h.kernels.source, "papaya calibrate, 2026-11-29");
  // A figure out of range names the file.
  doc["kernel_model"]["memory_efficiency"] = 1.5;
  write_json_file(path, doc);
  try {
    load_hardware(path);
    FAIL() << "an efficiency above 1 loaded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_hardware(::testing::TempDir() + "absent-gpu.json"), InputError);
}

TEST(Hardware, LookupByNameOrAliasIgnoresCase) {
  const HardwareSpec h = load_hardware("h100");
  EXPECT_EQ(h.name, "H100-SXM-80GB");
  EXPECT_DOUBLE_EQ(h.memory_bytes, 80.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(h.peak_for("bf16"), 989.5e12);
  EXPECT_EQ(load_hardware("v100").name, "V100-16GB");
  EXPECT_EQ(load_hardware("A100-40gb").name, "A100-40GB");
}

TEST(Hardware, PrecisionWithoutAPathIsAnError) {
  EXPECT_THROW(load_hardware("V100-16GB").peak_for("bf16"), InputError);
  EXPECT_THROW(load_hardware("k80").peak_for("fp16"), InputError);  // Kepler: fp16 is storage only
  EXPECT_DOUBLE_EQ(load_hardware("A100-40GB").peak_for("fp32", /*allow_tf32=*/true), 156e12);
}

// Autocast's FLOPs are nearly all its matmuls': priced at its half type's peak.
TEST(Hardware, AutocastRunsAtItsHalfTypesPeak) {
  const HardwareSpec v100 = load_hardware("V100-16GB");
  EXPECT_DOUBLE_EQ(v100.peak_for("amp-fp16"), v100.peak_for("fp16"));
  EXPECT_THROW(v100.peak_for("amp-bf16"), InputError);  // Volta has no bf16
  EXPECT_DOUBLE_EQ(load_hardware("h100").peak_for("amp-bf16"), 989.5e12);
  EXPECT_EQ(compute_path("amp-bf16"), "bf16");
  EXPECT_EQ(compute_path("fp32"), "fp32");
}

TEST(Hardware, UnknownNameListsTheCatalog) {
  try {
    load_hardware("tpu-v4");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown hardware 'tpu-v4'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("H200"), std::string::npos);
  }
}

// Figures as the datasheets give them (per GPU, dense).
TEST(Hardware, AddedEntriesCarryTheirDatasheetFigures) {
  const HardwareSpec k80 = load_hardware("tesla-k80");
  EXPECT_DOUBLE_EQ(k80.memory_bytes, 12.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(k80.memory_bandwidth, 240e9);
  EXPECT_DOUBLE_EQ(k80.peak_for("fp32"), 4.37e12);
  EXPECT_DOUBLE_EQ(load_hardware("p100").peak_for("fp16"), 18.7e12);
  EXPECT_DOUBLE_EQ(load_hardware("a40").peak_for("bf16"), 149.7e12);
  EXPECT_DOUBLE_EQ(load_hardware("l40s").peak_for("fp32", /*allow_tf32=*/true), 183e12);
  EXPECT_DOUBLE_EQ(load_hardware("rtx-6000-ada").memory_bandwidth, 960e9);
  EXPECT_DOUBLE_EQ(load_hardware("b200").memory_bytes, 180.0 * (1 << 30));
  const HardwareSpec mi300x = load_hardware("mi300x");
  EXPECT_EQ(mi300x.vendor, "AMD");
  EXPECT_DOUBLE_EQ(mi300x.memory_bytes, 192.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(mi300x.peak_for("bf16"), 1307.4e12);
}

}  // namespace
}  // namespace papaya::model
