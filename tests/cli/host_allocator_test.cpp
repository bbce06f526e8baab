// jemalloc serves the process's malloc, papaya's and this test's.
#include "cli/process/host_allocator.h"

#include <gtest/gtest.h>

#include "tests/cli/run_papaya.h"

namespace papaya::cli {
namespace {

TEST(HostAllocator, JemallocServesMallocAndVersionSaysSo) {
#ifdef PAPAYA_SANITIZE
  GTEST_SKIP() << "AddressSanitizer's allocator stands in for jemalloc";
#else
  const std::string allocator = host_allocator();
  EXPECT_EQ(allocator.rfind("jemalloc ", 0), 0u) << allocator;
  const testing::Outcome version = testing::run_papaya("--version");
  ASSERT_EQ(version.code, 0) << version.err;
  EXPECT_NE(version.out.find(", " + allocator + ";"), std::string::npos) << version.out;
#endif
}

}  // namespace
}  // namespace papaya::cli
