#pragma once
// Running out of memory while profiling a batch size: the allocator's own
// errors (CUDA's caching allocator, the CPU allocator), or the emulated device
// limit of `papaya profile --memory-limit`. Such a batch is recorded as OOM.
#include <cstdint>
#include <exception>
#include <stdexcept>

namespace papaya::profiler {

// The allocator's bytes passed the emulated device limit.
class MemoryLimitExceeded : public std::runtime_error {
 public:
  MemoryLimitExceeded(int64_t bytes, int64_t limit);
};

// Whether `error` says that memory ran out (any of the above).
bool is_out_of_memory(const std::exception& error);

}  // namespace papaya::profiler
