#pragma once
// Rotary positions' frequencies: each pair of a head's rotated dimensions
// turns at base^(-2i/dims) radians a position, scaled for long contexts as
// HuggingFace's rope_scaling says (linear: every frequency divided by the
// factor; llama3, Llama 3.1's: the low frequencies divided, the high ones
// kept, a smooth blend between; yarn, YaRN's (Peng et al., 2023): the
// same by how many turns each makes over the original positions, and cos
// and sin scaled by an attention factor; longrope, Phi-3's long-context
// one: each frequency divided by its own factor, the long ones past the
// original positions, the short ones within, and cos and sin scaled).
#include <cstdint>
#include <string>
#include <vector>

namespace papaya::model {

struct RopeScaling {
  std::string type = "none";  // none | linear | llama3 | yarn | longrope
  double factor = 1;
  // llama3: wavelengths past original_max_positions / low_freq_factor are
  // divided by the factor, those under original_max_positions /
  // high_freq_factor kept.
  double low_freq_factor = 1, high_freq_factor = 4;
  double original_max_positions = 8192;
  // yarn: frequencies that turn more than beta_fast times over the original
  // positions kept, fewer than beta_slow divided by the factor, linear in
  // the dimension between (the bounds rounded outwards where `truncate`);
  // cos and sin times attention_factor (0: 0.1 ln(factor) + 1).
  double beta_fast = 32, beta_slow = 1, attention_factor = 0;
  bool truncate = true;
  // longrope: one factor a pair for sequences within the original
  // positions, one past them; cos and sin times attention_factor (0:
  // sqrt(1 + ln(factor) / ln(original_max_positions))).
  std::vector<double> short_factors, long_factors;
  bool scales() const { return type != "none"; }
};

// The dims / 2 frequencies (radians a position) of a rotation over `dims`
// dimensions at `base`, scaled, for a sequence of `tokens` (longrope's
// factors are the long ones past the original positions).
std::vector<double> rotary_frequencies(int dims, double base, const RopeScaling& scaling, int64_t tokens = 0);

// What the rotation's cos and sin are multiplied by: yarn's and longrope's
// attention factor, else 1.
double rotary_magnitude(const RopeScaling& scaling);

}  // namespace papaya::model
