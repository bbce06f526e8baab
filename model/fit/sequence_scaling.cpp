#include "model/fit/sequence_scaling.h"

#include <algorithm>

#include "model/error.h"
#include "model/fit/extrapolation.h"

namespace papaya::model {

LayerModel at_sequence_length(const std::vector<ModelAtLength>& profiled, int seq_len, const std::string& label) {
  if (profiled.size() != 3) {
    throw InputError(label + ": a sequence length needs profiles at three sequence lengths (has " +
                     std::to_string(profiled.size()) + ")");
  }
  std::vector<ModelAtLength> sorted = profiled;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.seq_len < b.seq_len; });
  if (sorted[0].seq_len == sorted[1].seq_len || sorted[1].seq_len == sorted[2].seq_len) {
    throw InputError(label + ": the profiles' sequence lengths must differ (" + std::to_string(sorted[0].seq_len) + ", " +
                     std::to_string(sorted[1].seq_len) + ", " + std::to_string(sorted[2].seq_len) + ")");
  }
  const ModelAtSize models[3] = {{static_cast<double>(sorted[0].seq_len), sorted[0].model},
                                 {static_cast<double>(sorted[1].seq_len), sorted[1].model},
                                 {static_cast<double>(sorted[2].seq_len), sorted[2].model}};
  return extrapolated(models, seq_len, FlopsGrowth::quadratic, label);
}

}  // namespace papaya::model
