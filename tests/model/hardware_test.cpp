#include <gtest/gtest.h>

#include "model/error.h"
#include "model/hardware.h"

namespace papaya::model {
namespace {

TEST(Hardware, CatalogHasTheListedAccelerators) {
  std::vector<std::string> names;
  for (const auto& h : hardware_catalog()) names.push_back(h.name);
  for (const char* expected : {"V100-16GB", "T4", "A10", "L4", "RTX-4090", "A100-40GB", "A100-80GB", "H100-PCIe-80GB",
                               "H100-SXM-80GB", "H200"}) {
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
  EXPECT_DOUBLE_EQ(load_hardware("A100-40GB").peak_for("fp32", /*allow_tf32=*/true), 156e12);
}

TEST(Hardware, UnknownNameListsTheCatalog) {
  try {
    load_hardware("B200");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown hardware 'B200'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("H200"), std::string::npos);
  }
}

}  // namespace
}  // namespace papaya::model
