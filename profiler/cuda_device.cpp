#include "profiler/cuda_device.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>

namespace papaya::profiler {

int64_t cuda_memory_bytes(int device_index) {
  return static_cast<int64_t>(at::cuda::getDeviceProperties(device_index)->totalGlobalMem);
}

std::string cuda_runtime_version() {
  int version = 0;
  cudaRuntimeGetVersion(&version);
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

void cuda_release_cache() { c10::cuda::CUDACachingAllocator::emptyCache(); }

}  // namespace papaya::profiler
