#include "executor/storage/rounding.h"

#include <ATen/CPUGeneratorImpl.h>

#include <mutex>

namespace papaya::executor {

at::Generator& rounding_generator() {
  static at::Generator generator = at::detail::createCPUGenerator(0);
  return generator;
}

void seed_rounding(uint64_t seed) {
  at::Generator& generator = rounding_generator();
  const std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_current_seed(seed);
}

uint64_t next_rounding_seed() {
  at::Generator& generator = rounding_generator();
  const std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get<at::CPUGeneratorImpl>()->random64();
}

}  // namespace papaya::executor
