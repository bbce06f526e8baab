#include "executor/storage/cpu_isa.h"

#include <algorithm>
#include <atomic>

namespace papaya::executor::cpu_isa {
namespace {

Level detected() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")) {
    return Level::avx512;
  }
  if (__builtin_cpu_supports("avx2")) return Level::avx2;
#endif
  return Level::baseline;
}

std::atomic<Level>& highest() {
  static std::atomic<Level> value{Level::avx512};
  return value;
}

}  // namespace

Level level() {
  static const Level cpu = detected();
  return std::min(cpu, highest().load(std::memory_order_relaxed));
}

void limit(Level level) { highest().store(level, std::memory_order_relaxed); }

const char* to_string(Level level) {
  switch (level) {
    case Level::baseline: return "baseline";
    case Level::avx2: return "avx2";
    case Level::avx512: return "avx512";
  }
  return "?";
}

}  // namespace papaya::executor::cpu_isa
