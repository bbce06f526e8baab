// Rotary frequencies as HuggingFace's rope_scaling makes them: linear
// divides every one; llama3 (Llama 3.1's 8, 1, 4 over 8,192 positions)
// keeps those of wavelength under 8192 / 4, divides those over 8192 / 1 by
// 8, and blends between, continuously at both ends.
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

}  // namespace
}  // namespace papaya::model
