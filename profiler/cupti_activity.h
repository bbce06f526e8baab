#pragma once
// A thin wrapper over CUPTI's activity API (as Kineto's CuptiActivityApi is):
// records kernels, memory copies and external correlations into buffers that
// CUPTI fills, and sets this thread's external correlation id. No LibTorch,
// and no CUPTI header for its users. One recording per process.
#include <cstdint>
#include <vector>

#include "profiler/kernel_attribution.h"

namespace papaya::profiler::cupti {

struct Records {
  std::vector<DeviceActivity> activities;  // kernels and memory copies
  std::vector<ExternalCorrelation> correlations;
};

// Enables CONCURRENT_KERNEL, MEMCPY and EXTERNAL_CORRELATION activity records.
// Throws std::runtime_error with CUPTI's message if it cannot (no driver, no
// permission to profile).
void start();
// Disables them; what was recorded and not taken is dropped.
void stop();
// Flushes CUPTI's buffers and returns what was recorded since the last call.
// Call it once the device has finished the work of interest.
Records take();
// Sets the external correlation id that this thread's next CUDA calls carry
// (0: none); it replaces the one this function set before on this thread.
void set_external_id(uint64_t id);

}  // namespace papaya::profiler::cupti
