#include "profiler/kernel_attribution.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

namespace papaya::profiler {

std::map<uint64_t, double> busy_seconds_by_external_id(const std::vector<DeviceActivity>& activities,
                                                       const std::vector<ExternalCorrelation>& correlations) {
  std::unordered_map<uint32_t, uint64_t> external_of;
  for (const auto& c : correlations) external_of[c.correlation_id] = c.external_id;

  std::map<uint64_t, std::vector<std::pair<uint64_t, uint64_t>>> intervals;
  for (const auto& a : activities) {
    if (a.end_ns <= a.start_ns) continue;  // no timestamps collected
    const auto it = external_of.find(a.correlation_id);
    intervals[it == external_of.end() ? 0 : it->second].emplace_back(a.start_ns, a.end_ns);
  }

  std::map<uint64_t, double> busy;
  for (auto& [id, list] : intervals) {
    std::sort(list.begin(), list.end());
    uint64_t total = 0, start = list.front().first, end = list.front().second;
    for (const auto& [s, e] : list) {
      if (s > end) {
        total += end - start;
        start = s;
      }
      end = std::max(end, e);
    }
    total += end - start;
    busy[id] = static_cast<double>(total) * 1e-9;
  }
  return busy;
}

}  // namespace papaya::profiler
