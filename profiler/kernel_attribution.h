#pragma once
// Device work as CUPTI's activity records report it, and its attribution to
// the external correlation ids that the profiler sets around each layer's
// passes. No LibTorch, no CUPTI: this is the logic, tested anywhere.
#include <cstdint>
#include <map>
#include <vector>

namespace papaya::profiler {

// A kernel or memory copy: when it ran on the device, and the correlation id
// of the CUDA call that launched it.
struct DeviceActivity {
  uint32_t correlation_id = 0;
  uint64_t start_ns = 0, end_ns = 0;
};

// CUPTI's link from a CUDA call to the external id set when it was made.
struct ExternalCorrelation {
  uint32_t correlation_id = 0;
  uint64_t external_id = 0;
};

// Device-busy seconds per external id: the union of its activities' intervals,
// so that work overlapping on several streams counts once. Activities
// launched with no external id set are under id 0.
std::map<uint64_t, double> busy_seconds_by_external_id(const std::vector<DeviceActivity>& activities,
                                                       const std::vector<ExternalCorrelation>& correlations);

}  // namespace papaya::profiler
