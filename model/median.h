#pragma once
// The median: what a profile records of repeated timings, since one run
// slowed down by another process on a shared machine does not move it, and
// what the robust fits measure their residuals' spread with.
#include <algorithm>
#include <vector>

namespace papaya::model {

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

}  // namespace papaya::model
