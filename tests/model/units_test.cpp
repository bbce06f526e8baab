#include <gtest/gtest.h>

#include "model/error.h"
#include "model/units.h"

namespace papaya::model {
namespace {

TEST(Units, ParsesSizes) {
  EXPECT_EQ(parse_size("24GiB", "--budget"), 24LL << 30);
  EXPECT_EQ(parse_size("24 GB", "--budget"), 24000000000LL);
  EXPECT_EQ(parse_size("800MiB", "--budget"), 800LL << 20);
  EXPECT_EQ(parse_size("16G", "--budget"), 16LL << 30);
  EXPECT_EQ(parse_size("1.5e9", "--budget"), 1500000000LL);
}

TEST(Units, RejectsBadSizes) {
  // "1e30" and ".108104" found by tests/fuzz/units.cpp: they gave a negative size and 0.
  for (const char* bad : {"", "GiB", "12 parsecs", "-3GiB", "0", "1e30", "9e9GiB", ".108104", "0.4"}) {
    EXPECT_THROW(parse_size(bad, "--budget"), InputError) << bad;
  }
}

// Found by tests/fuzz/units.cpp: the message quoted the line break.
TEST(Units, ABadSizeIsReportedOnOneLine) {
  try {
    parse_size("\n0-8M B", "--budget");
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "--budget: '\\n0-8M B' is not a positive size (examples: 24GiB, 800MiB, 16GB)");
  }
}

TEST(Units, ParsesIntLists) {
  EXPECT_EQ(parse_int_list("1,2,4,8", "--batch"), (std::vector<int>{1, 2, 4, 8}));
  EXPECT_THROW(parse_int_list("1,x", "--batch"), InputError);
  EXPECT_THROW(parse_int_list("1,0", "--batch"), InputError);
  EXPECT_THROW(parse_int_list("", "--batch"), InputError);
}

TEST(Units, FormatsBytes) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(3.0 * (1 << 30)), "3.00 GiB");
}

}  // namespace
}  // namespace papaya::model
