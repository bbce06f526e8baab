#pragma once
// The median of repeated timings: what a profile records, since one run slowed
// down by another process on a shared machine does not move it.
#include <algorithm>
#include <vector>

namespace papaya::profiler {

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

}  // namespace papaya::profiler
