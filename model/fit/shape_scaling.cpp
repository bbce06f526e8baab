#include "model/fit/shape_scaling.h"

#include <algorithm>

#include "model/error.h"
#include "model/fit/extrapolation.h"

namespace papaya::model {

LayerModel at_full_shape(const std::vector<ModelAtFraction>& profiled, int parts, ShapeCut cut, const std::string& label) {
  std::vector<ModelAtFraction> sorted = profiled;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.k < b.k; });
  if (sorted.size() != 3 || sorted[0].k == sorted[1].k || sorted[1].k == sorted[2].k) {
    throw InputError(label + ": a network's shape is modelled from three distinct fractions of it (has " +
                     std::to_string(sorted.size()) + ")");
  }
  const ModelAtSize models[3] = {{static_cast<double>(sorted[0].k), sorted[0].model},
                                 {static_cast<double>(sorted[1].k), sorted[1].model},
                                 {static_cast<double>(sorted[2].k), sorted[2].model}};
  return extrapolated(models, parts, cut == ShapeCut::widths ? FlopsGrowth::quadratic : FlopsGrowth::cubic_from_zero, label);
}

}  // namespace papaya::model
