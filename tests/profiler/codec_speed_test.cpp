// The profiler's measurements of the codecs (speed and scratch per bit
// width) and of the inverted activations' backward.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "profiler/codec_speed.h"

namespace papaya::profiler {
namespace {

TEST(Codec, InvertedBackwardRatesAreMeasuredForGeluAndSilu) {
  const auto inverts = measure_inverts(torch::kCPU, torch::kFloat);
  ASSERT_EQ(inverts.size(), 2u);
  EXPECT_EQ(inverts[0].kind, model::LayerKind::gelu);
  EXPECT_EQ(inverts[1].kind, model::LayerKind::silu);
  for (const auto& i : inverts) {
    EXPECT_GT(i.from_output_bytes_per_s, 1e6) << model::to_string(i.kind);
    EXPECT_GT(i.native_bytes_per_s, 1e6) << model::to_string(i.kind);
  }
}

TEST(Codec, SpeedAndScratchAreMeasuredForEveryWidth) {
  executor::MemoryTracker memory(torch::kCPU);
  const auto codecs = measure_codecs(torch::kCPU, torch::kFloat, memory);
  std::vector<int> widths;
  const double raw = 4.0 * (1 << 20);  // the benchmark's tensor
  for (const auto& c : codecs) {
    widths.push_back(c.bits);
    EXPECT_GT(c.pack_bytes_per_s, 1e6) << c.bits;
    EXPECT_GT(c.unpack_bytes_per_s, 1e6) << c.bits;
    // A call's cost beyond its bytes is the difference of two timings, 0
    // where a loaded machine hides it, never negative.
    EXPECT_GE(c.pack_seconds_per_call, 0) << c.bits;
    EXPECT_GE(c.unpack_seconds_per_call, 0) << c.bits;
    // On the CPU the quantizer and the mask's packing allocate nothing but
    // their result (a group's values wait in a per-thread buffer of one group).
    EXPECT_EQ(c.pack_scratch_per_byte, 0) << c.bits;
    EXPECT_EQ(c.pack_scratch_max, 0) << c.bits;
    EXPECT_LT(c.pack_scratch_max, 0.3 * raw) << c.bits;
    EXPECT_LT(c.unpack_scratch_max, 0.3 * raw) << c.bits;
  }
  EXPECT_EQ(widths, (std::vector<int>{8, 4, 2, 1}));
}

}  // namespace
}  // namespace papaya::profiler
