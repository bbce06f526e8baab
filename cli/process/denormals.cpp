#include "cli/process/denormals.h"

#if defined(__x86_64__) || defined(__i386__)
#include <pmmintrin.h>
#include <xmmintrin.h>
#endif

namespace papaya::cli {

bool flush_denormals() {
#if defined(__x86_64__) || defined(__i386__)
  if (!__builtin_cpu_supports("sse3")) return false;  // denormals-are-zero came with it
  _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
  _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
  return true;
#else
  return false;
#endif
}

}  // namespace papaya::cli
