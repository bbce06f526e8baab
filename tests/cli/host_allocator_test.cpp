// jemalloc serves the process's malloc, papaya's and this test's, keeps
// what is freed, and asks for huge pages.
#include "cli/process/host_allocator.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/cli/run_papaya.h"

#ifndef PAPAYA_SANITIZE
#include <jemalloc/jemalloc.h>
#endif

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

// Pages freed stay with the process for the next step's tensors.
TEST(HostAllocator, FreedPagesAreNeverGivenBack) {
#ifdef PAPAYA_SANITIZE
  GTEST_SKIP() << "AddressSanitizer's allocator stands in for jemalloc";
#else
  for (const char* decay : {"opt.dirty_decay_ms", "opt.muzzy_decay_ms"}) {
    ssize_t ms = 0;
    size_t size = sizeof(ms);
    ASSERT_EQ(mallctl(decay, &ms, &size, nullptr, 0), 0) << decay;
    EXPECT_EQ(ms, -1) << decay;
  }
#endif
}

// Its memory in huge pages, where the kernel has them.
TEST(HostAllocator, AsksForHugePages) {
#ifdef PAPAYA_SANITIZE
  GTEST_SKIP() << "AddressSanitizer's allocator stands in for jemalloc";
#else
  const char* thp = nullptr;
  size_t size = sizeof(thp);
  ASSERT_EQ(mallctl("opt.thp", &thp, &size, nullptr, 0), 0);
  ASSERT_NE(thp, nullptr);
  // "not supported": a kernel without transparent huge pages, which jemalloc finds as it starts.
  EXPECT_TRUE(std::string(thp) == "always" || std::string(thp) == "not supported") << thp;
#endif
}

}  // namespace
}  // namespace papaya::cli
