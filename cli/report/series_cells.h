#pragma once
// Table cells of PAPAYA's global model, shared by fit --measurements and by
// predict and limits on a global model: a series' verdict and its best
// samples/s over the baseline's.
#include <optional>
#include <string>

#include "model/fit/global_fit.h"

namespace papaya::cli {

// The value formatted, or "-" where there is none.
template <typename T, typename Format>
std::string cell(const std::optional<T>& value, Format format) {
  return value ? format(*value) : "-";
}

// "yes", "no", "-" (undecided) or "baseline"; the analytic condition beside
// where it disagrees.
std::string helps_cell(const model::SeriesFit& fit);
// PAPAYA's ratio: "1.32x", "0.76x (runs)", "-".
std::string versus_baseline_cell(const model::SeriesFit& fit);

}  // namespace papaya::cli
