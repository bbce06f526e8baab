#include "profiler/out_of_memory.h"

#include <new>
#include <string>

#include "model/units.h"

namespace papaya::profiler {

MemoryLimitExceeded::MemoryLimitExceeded(int64_t bytes, int64_t limit)
    : std::runtime_error("out of memory: " + model::format_bytes(static_cast<double>(bytes)) +
                         " allocated, over the memory limit of " + model::format_bytes(static_cast<double>(limit))) {}

bool is_out_of_memory(const std::exception& error) {
  if (dynamic_cast<const std::bad_alloc*>(&error) || dynamic_cast<const MemoryLimitExceeded*>(&error)) return true;
  // c10's errors say it in words: "CUDA out of memory", "DefaultCPUAllocator:
  // can't allocate memory"; an error thrown inside backward may come back
  // from the autograd engine wrapped in one.
  const std::string what = error.what();
  return what.find("out of memory") != std::string::npos || what.find("can't allocate memory") != std::string::npos;
}

}  // namespace papaya::profiler
