#pragma once
// The CUDA caching allocator's statistics (memory_cuda.cpp); in a build
// without CUDA these are never reached, as no CUDA device can be chosen.
#include <cstdint>

namespace papaya::executor {

struct AllocatedBytes {
  int64_t current = 0, peak = 0;
};

AllocatedBytes cuda_allocated(int device_index);
// The bytes the tensors asked for, before the allocator rounds each block up
// to 512 (LibTorch 2.1 or later; InputError before).
AllocatedBytes cuda_requested(int device_index);
int64_t cuda_reserved_peak(int device_index);
void cuda_reset_peak(int device_index);

}  // namespace papaya::executor
