#pragma once
// What the profiler asks of a CUDA device beyond LibTorch's portable API.
// Compiled only where LibTorch has CUDA (PAPAYA_CUDA).
#include <cstdint>
#include <string>

namespace papaya::profiler {

int64_t cuda_memory_bytes(int device_index);
// "13.0": the CUDA runtime LibTorch runs on.
std::string cuda_runtime_version();
// Hands the caching allocator's unused blocks back to the driver, so that the
// next batch's reserved peak is its own.
void cuda_release_cache();

}  // namespace papaya::profiler
