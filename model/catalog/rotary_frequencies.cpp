#include "model/catalog/rotary_frequencies.h"

#include <cmath>

namespace papaya::model {

std::vector<double> rotary_frequencies(int dims, double base, const RopeScaling& scaling) {
  std::vector<double> out;
  for (int i = 0; i < dims; i += 2) {
    const double frequency = std::pow(base, -static_cast<double>(i) / dims);
    if (scaling.type == "linear") {
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

}  // namespace papaya::model
