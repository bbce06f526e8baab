#pragma once
// Rotary positions' frequencies: each pair of a head's rotated dimensions
// turns at base^(-2i/dims) radians a position, scaled for long contexts as
// HuggingFace's rope_scaling says (linear: every frequency divided by the
// factor; llama3, Llama 3.1's: the low frequencies divided, the high ones
// kept, a smooth blend between).
#include <string>
#include <vector>

namespace papaya::model {

struct RopeScaling {
  std::string type = "none";  // none | linear | llama3
  double factor = 1;
  // llama3: wavelengths past original_max_positions / low_freq_factor are
  // divided by the factor, those under original_max_positions /
  // high_freq_factor kept.
  double low_freq_factor = 1, high_freq_factor = 4;
  double original_max_positions = 8192;
  bool scales() const { return type != "none"; }
};

// The dims / 2 frequencies (radians a position) of a rotation over `dims`
// dimensions at `base`, scaled.
std::vector<double> rotary_frequencies(int dims, double base, const RopeScaling& scaling);

}  // namespace papaya::model
