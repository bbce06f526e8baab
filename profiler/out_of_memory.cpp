#include "profiler/out_of_memory.h"

#include <string>

#include "executor/memory.h"
#include "model/units.h"

namespace papaya::profiler {

MemoryLimitExceeded::MemoryLimitExceeded(int64_t bytes, int64_t limit)
    : std::runtime_error("out of memory: " + model::format_bytes(static_cast<double>(bytes)) +
                         " allocated, over the memory limit of " + model::format_bytes(static_cast<double>(limit))) {}

bool is_out_of_memory(const std::exception& error) {
  return dynamic_cast<const MemoryLimitExceeded*>(&error) || executor::is_allocator_out_of_memory(error);
}

}  // namespace papaya::profiler
