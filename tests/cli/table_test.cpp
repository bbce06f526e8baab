// The number formats of the tables for people.
#include "cli/report/table.h"

#include <gtest/gtest.h>

namespace papaya::cli {
namespace {

// Three significant digits: a 7B network's 0.0123 samples/s on a CPU reads
// as itself, not as 0.0.
TEST(Table, RatesKeepThreeSignificantDigits) {
  EXPECT_EQ(per_second(1790.7), "1791");
  EXPECT_EQ(per_second(166.3), "166");
  EXPECT_EQ(per_second(12.34), "12.3");
  EXPECT_EQ(per_second(2.346), "2.35");
  EXPECT_EQ(per_second(0.012345), "0.0123");
  EXPECT_EQ(per_second(0), "0.0");
}

}  // namespace
}  // namespace papaya::cli
