// Each data-parallel rank's static bytes by ZeRO stage.
#include "model/sharding.h"

#include <gtest/gtest.h>

#include "model/error.h"

namespace papaya::model {
namespace {

TEST(Sharding, EachStageSplitsOneMoreStateNWays) {
  const double p = 1e9;
  EXPECT_DOUBLE_EQ(rank_static(p, 8, 0).total(), 16 * p);
  EXPECT_DOUBLE_EQ(rank_static(p, 8, 1).total(), 8 * p + 1 * p);
  EXPECT_DOUBLE_EQ(rank_static(p, 8, 2).total(), 4 * p + 0.5 * p + 1 * p);
  EXPECT_DOUBLE_EQ(rank_static(p, 8, 3).total(), 2 * p);
  EXPECT_DOUBLE_EQ(rank_static(p, 1, 3).total(), 16 * p);  // one rank shards nothing
  EXPECT_THROW(rank_static(p, 8, 4), InputError);
  EXPECT_THROW(rank_static(p, 0, 1), InputError);
}

}  // namespace
}  // namespace papaya::model
