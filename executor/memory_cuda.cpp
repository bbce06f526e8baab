#include "executor/memory_cuda.h"

#ifdef PAPAYA_CUDA
#include <ATen/Context.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <torch/version.h>
#endif

#include <stdexcept>

#include "model/error.h"

namespace papaya::executor {

#ifdef PAPAYA_CUDA
namespace {
// The caching allocator starts lazily (PyTorch 2.x), at the first CUDA
// tensor; its statistics are read before that (a peak reset first of all).
int resolve(int index) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 6)
  at::globalContext().lazyInitDevice(c10::DeviceType::CUDA);
#else
  at::globalContext().lazyInitCUDA();
#endif
  return index < 0 ? c10::cuda::current_device() : index;
}
}  // namespace

// Index 0 of each statistic is the aggregate over pool kinds, in every version.
AllocatedBytes cuda_allocated(int device_index) {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(resolve(device_index));
  return {stats.allocated_bytes[0].current, stats.allocated_bytes[0].peak};
}

AllocatedBytes cuda_requested(int device_index) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(resolve(device_index));
  return {stats.requested_bytes[0].current, stats.requested_bytes[0].peak};
#else
  (void)device_index;
  throw InputError("counting tensors' own bytes on CUDA needs LibTorch 2.1 or later (this one is " TORCH_VERSION ")");
#endif
}

int64_t cuda_reserved_peak(int device_index) {
  return c10::cuda::CUDACachingAllocator::getDeviceStats(resolve(device_index)).reserved_bytes[0].peak;
}

void cuda_reset_peak(int device_index) { c10::cuda::CUDACachingAllocator::resetPeakStats(resolve(device_index)); }
#else
AllocatedBytes cuda_allocated(int) { throw std::logic_error("papaya was built without CUDA"); }
AllocatedBytes cuda_requested(int) { throw std::logic_error("papaya was built without CUDA"); }
int64_t cuda_reserved_peak(int) { throw std::logic_error("papaya was built without CUDA"); }
void cuda_reset_peak(int) { throw std::logic_error("papaya was built without CUDA"); }
#endif

}  // namespace papaya::executor
