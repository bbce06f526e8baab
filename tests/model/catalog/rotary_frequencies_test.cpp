// Rotary frequencies as HuggingFace's rope_scaling makes them: linear
// divides every one; llama3 (Llama 3.1's 8, 1, 4 over 8,192 positions)
// keeps those of wavelength under 8192 / 4, divides those over 8192 / 1 by
// 8, and blends between, continuously at both ends; yarn as
// transformers' _compute_yarn_parameters gives them.
#include <gtest/gtest.h>

#include <cmath>

#include "model/catalog/rotary_frequencies.h"

namespace papaya::model {
namespace {

TEST(RotaryFrequencies, UnscaledAreTheBasesPowers) {
  const std::vector<double> f = rotary_frequencies(8, 10000, {});
  ASSERT_EQ(f.size(), 4u);
  EXPECT_DOUBLE_EQ(f[0], 1);
  EXPECT_DOUBLE_EQ(f[1], std::pow(10000, -0.25));
  EXPECT_DOUBLE_EQ(f[3], std::pow(10000, -0.75));
}

TEST(RotaryFrequencies, LinearDividesEveryOne) {
  RopeScaling linear;
  linear.type = "linear";
  linear.factor = 8;
  const std::vector<double> plain = rotary_frequencies(128, 1e6, {}), scaled = rotary_frequencies(128, 1e6, linear);
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_DOUBLE_EQ(scaled[i], plain[i] / 8) << i;
}

TEST(RotaryFrequencies, Llama3KeepsTheHighDividesTheLowAndBlendsBetween) {
  RopeScaling llama3;
  llama3.type = "llama3";
  llama3.factor = 8;
  const std::vector<double> plain = rotary_frequencies(128, 500000, {}), scaled = rotary_frequencies(128, 500000, llama3);
  int kept = 0, divided = 0, blended = 0;
  for (size_t i = 0; i < plain.size(); ++i) {
    const double wavelength = 2 * M_PI / plain[i];
    if (wavelength < 8192.0 / 4) {
      EXPECT_DOUBLE_EQ(scaled[i], plain[i]) << i;
      ++kept;
    } else if (wavelength > 8192.0) {
      EXPECT_DOUBLE_EQ(scaled[i], plain[i] / 8) << i;
      ++divided;
    } else {
      // Between: f / 8 at a wavelength of 8192, f at 2048, linear in 8192 / wavelength.
      const double smooth = (8192 / wavelength - 1) / 3;
      EXPECT_GT(smooth, 0) << i;
      EXPECT_LT(smooth, 1) << i;
      EXPECT_NEAR(scaled[i], plain[i] / 8 + smooth * (plain[i] - plain[i] / 8), 1e-15) << i;
      ++blended;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_GT(blended, 0);
}

// yarn: frequencies turning more than beta_fast times over the original
// positions kept, fewer than beta_slow divided by the factor, linear in the
// pair between; the bounds rounded outwards unless `truncate` is false. The
// figures: transformers' _compute_yarn_parameters for GPT-OSS's
// rotation (64 dimensions, base 150000, factor 32 over 4,096 positions,
// not truncated: the ramp from pair 8.09 to 17.40) and a Qwen3 long-context
// one (128, 1e6, factor 4 over 32,768, truncated: pairs 23 to 40), that
// function evaluated in float64; cos and sin are scaled by 0.1 ln(32) + 1
// unless an attention factor is given.
TEST(RotaryFrequencies, YarnKeepsTheFastDividesTheSlowAndRampsBetween) {
  RopeScaling oss;
  oss.type = "yarn";
  oss.factor = 32;
  oss.original_max_positions = 4096;
  oss.truncate = false;
  const std::vector<double> f = rotary_frequencies(64, 150000, oss), plain = rotary_frequencies(64, 150000, {});
  ASSERT_EQ(f.size(), 32u);
  const std::vector<std::pair<size_t, double>> expected = {{0, 1.0},
                                                           {5, 0.15532298948448497},
                                                           {10, 0.019335001126540362},
                                                           {12, 0.006794959489732219},
                                                           {15, 0.0010526021013863359},
                                                           {20, 1.818833668168956e-05},
                                                           {31, 3.0235114281192144e-07}};
  for (const auto& [i, value] : expected) EXPECT_NEAR(f[i], value, 1e-12 * value) << i;
  for (size_t i = 0; i <= 8; ++i) EXPECT_DOUBLE_EQ(f[i], plain[i]) << i;        // kept
  for (size_t i = 18; i < 32; ++i) EXPECT_DOUBLE_EQ(f[i], plain[i] / 32) << i;  // divided
  EXPECT_NEAR(rotary_magnitude(oss), 0.1 * std::log(32.0) + 1, 1e-15);
  RopeScaling qwen = oss;
  qwen.factor = 4;
  qwen.original_max_positions = 32768;
  qwen.truncate = true;
  const std::vector<double> q = rotary_frequencies(128, 1e6, qwen);
  for (const auto& [i, value] : std::vector<std::pair<size_t, double>>{
           {5, 0.3398208328942559}, {25, 0.004131738022518394}, {31, 0.0008029597275452302}, {63, 3.102344401879299e-07}}) {
    EXPECT_NEAR(q[i], value, 1e-12 * value) << i;
  }
  qwen.attention_factor = 1.25;
  EXPECT_DOUBLE_EQ(rotary_magnitude(qwen), 1.25);
  EXPECT_DOUBLE_EQ(rotary_magnitude({}), 1);
}

}  // namespace
}  // namespace papaya::model
