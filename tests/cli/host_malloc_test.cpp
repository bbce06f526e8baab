// The process's host allocator keeps freed memory for reuse.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "cli/host_malloc.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace papaya::cli {
namespace {

// glibc maps a block this large for itself by default (its threshold grows to
// 32 MiB at most) and unmaps it when freed: the next one page-faults anew.
TEST(HostMalloc, LargeBlocksComeFromTheHeapAndStayThereWhenFreed) {
#if defined(PAPAYA_SANITIZE)
  GTEST_SKIP() << "AddressSanitizer's allocator stands in for glibc's malloc";
#elif !defined(__GLIBC__)
  GTEST_SKIP() << "glibc's malloc only";
#else
  keep_freed_host_memory();
  constexpr size_t size = size_t{64} << 20;
  void* block = std::malloc(size);
  ASSERT_NE(block, nullptr);
  std::memset(block, 1, size);
  EXPECT_EQ(mallinfo2().hblks, 0u) << "the block was mapped for itself";
  const size_t heap = mallinfo2().arena;
  EXPECT_GE(heap, size);
  std::free(block);
  EXPECT_EQ(mallinfo2().arena, heap) << "the heap was trimmed";
#endif
}

}  // namespace
}  // namespace papaya::cli
