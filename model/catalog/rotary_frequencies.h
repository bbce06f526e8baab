#pragma once
// Rotary positions' frequencies: each pair of a head's rotated dimensions
// turns at base^(-2i/dims) radians a position, scaled for long contexts as
// HuggingFace's rope_scaling says (linear: every frequency divided by the
// factor; llama3, Llama 3.1's: the low frequencies divided, the high ones
// kept, a smooth blend between; yarn, YaRN's (Peng et al., 2023): the
// same by how many turns each makes over the original positions, and cos
// and sin scaled by an attention factor).
#include <string>
#include <vector>

namespace papaya::model {

struct RopeScaling {
  std::string type = "none";  // none | linear | llama3 | yarn
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
  bool scales() const { return type != "none"; }
};

// The dims / 2 frequencies (radians a position) of a rotation over `dims`
// dimensions at `base`, scaled.
std::vector<double> rotary_frequencies(int dims, double base, const RopeScaling& scaling);

// What the rotation's cos and sin are multiplied by: yarn's attention
// factor, else 1.
double rotary_magnitude(const RopeScaling& scaling);

}  // namespace papaya::model
