#include "model/catalog/rotary_frequencies.h"

#include <algorithm>
#include <cmath>

namespace papaya::model {
namespace {

// yarn: the dimension (of `dims`) whose frequency turns `turns` times over
// `positions`, fractional.
double dimension_turning(double turns, int dims, double base, double positions) {
  return dims * std::log(positions / (turns * 2 * M_PI)) / (2 * std::log(base));
}

}  // namespace

std::vector<double> rotary_frequencies(int dims, double base, const RopeScaling& scaling, int64_t tokens) {
  std::vector<double> out;
  const std::vector<double>& longrope =
      static_cast<double>(tokens) > scaling.original_max_positions ? scaling.long_factors : scaling.short_factors;
  // yarn's ramp over the pairs: from the pair turning beta_fast times to the one turning beta_slow times.
  double ramp_low = 0, ramp_high = 0;
  if (scaling.type == "yarn") {
    ramp_low = dimension_turning(scaling.beta_fast, dims, base, scaling.original_max_positions);
    ramp_high = dimension_turning(scaling.beta_slow, dims, base, scaling.original_max_positions);
    if (scaling.truncate) {
      ramp_low = std::floor(ramp_low);
      ramp_high = std::ceil(ramp_high);
    }
    ramp_low = std::max(ramp_low, 0.0);
    ramp_high = std::min(ramp_high, dims - 1.0);
    if (ramp_low == ramp_high) ramp_high += 0.001;
  }
  for (int i = 0; i < dims; i += 2) {
    const double frequency = std::pow(base, -static_cast<double>(i) / dims);
    if (scaling.type == "longrope") {
      out.push_back(frequency / longrope.at(static_cast<size_t>(i / 2)));
    } else if (scaling.type == "yarn") {
      const double interpolated = std::clamp((i / 2 - ramp_low) / (ramp_high - ramp_low), 0.0, 1.0);
      out.push_back(frequency / scaling.factor * interpolated + frequency * (1 - interpolated));
    } else if (scaling.type == "linear") {
      out.push_back(frequency / scaling.factor);
    } else if (scaling.type == "llama3") {
      const double wavelength = 2 * M_PI / frequency;
      const double longest_kept = scaling.original_max_positions / scaling.high_freq_factor;
      const double shortest_divided = scaling.original_max_positions / scaling.low_freq_factor;
      if (wavelength < longest_kept) {
        out.push_back(frequency);
      } else if (wavelength > shortest_divided) {
        out.push_back(frequency / scaling.factor);
      } else {
        const double smooth = (scaling.original_max_positions / wavelength - scaling.low_freq_factor) /
                              (scaling.high_freq_factor - scaling.low_freq_factor);
        out.push_back((1 - smooth) * frequency / scaling.factor + smooth * frequency);
      }
    } else {
      out.push_back(frequency);
    }
  }
  return out;
}

double rotary_magnitude(const RopeScaling& scaling) {
  if (scaling.type != "yarn" && scaling.type != "longrope") return 1;
  if (scaling.attention_factor > 0) return scaling.attention_factor;
  if (scaling.factor <= 1) return 1;
  if (scaling.type == "longrope") return std::sqrt(1 + std::log(scaling.factor) / std::log(scaling.original_max_positions));
  return 0.1 * std::log(scaling.factor) + 1;
}

}  // namespace papaya::model
