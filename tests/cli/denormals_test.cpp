// The process flushes denormal floats, on its threads too.
#include <gtest/gtest.h>

#include <thread>

#include "cli/process/denormals.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace papaya::cli {
namespace {

// Half the smallest normal float (a denormal), computed where the compiler
// cannot fold it.
float half_smallest_normal() {
  volatile float smallest = 1.17549435e-38f;
  volatile float half = 0.5f;
  return smallest * half;
}

TEST(Denormals, AreFlushedToZeroOnThisThreadAndOnThreadsStartedAfter) {
#if !defined(__x86_64__) && !defined(__i386__)
  GTEST_SKIP() << "x86 only";
#else
  const unsigned saved = _mm_getcsr();
  ASSERT_GT(half_smallest_normal(), 0.0f) << "denormals were flushed before";
  ASSERT_TRUE(flush_denormals());
  EXPECT_EQ(half_smallest_normal(), 0.0f);
  float on_thread = -1;
  std::thread([&] { on_thread = half_smallest_normal(); }).join();
  EXPECT_EQ(on_thread, 0.0f) << "a thread started after did not inherit the setting";
  _mm_setcsr(saved);  // the other tests in this process compute as before
  EXPECT_GT(half_smallest_normal(), 0.0f);
#endif
}

}  // namespace
}  // namespace papaya::cli
