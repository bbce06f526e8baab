// The link between data-parallel ranks: a ring allreduce's wire bytes, and
// latency and bandwidth read back from times that follow them.
#include "model/parallel/link.h"

#include <gtest/gtest.h>

#include <vector>

#include "model/error.h"

namespace papaya::model {
namespace {

TEST(Link, ARingAllreducePutsTwiceTheShareOfTheOthersOnEachWire) {
  EXPECT_DOUBLE_EQ(ring_allreduce_wire_bytes(1000, 2), 1000);
  EXPECT_DOUBLE_EQ(ring_allreduce_wire_bytes(1000, 4), 1500);
  EXPECT_DOUBLE_EQ(ring_allreduce_wire_bytes(1000, 1), 0);
}

TEST(Link, LatencyAndBandwidthComeBackFromTheirOwnTimes) {
  const LinkFit truth{25e-6, 5e9, std::nullopt};
  std::vector<CommSample> samples;
  for (double bytes = 4096; bytes <= 64e6; bytes *= 4) samples.push_back({bytes, truth.seconds(bytes, 4)});
  const LinkFit fit = fit_link(samples, 4);
  EXPECT_NEAR(fit.latency_s, truth.latency_s, 1e-9);
  EXPECT_NEAR(fit.bytes_per_s, truth.bytes_per_s, 1e-3 * truth.bytes_per_s);
  ASSERT_TRUE(fit.r2);
  EXPECT_NEAR(*fit.r2, 1, 1e-12);
}

TEST(Link, TimesThatDoNotGrowGiveNoBandwidth) { EXPECT_THROW(fit_link({{4096, 1e-3}, {1 << 20, 1e-3}}, 2), InputError); }

TEST(Link, GatherAndReduceScatterPutHalfAnAllreducesBytesOnTheWire) {
  const LinkFit link{1e-5, 1e9, std::nullopt};
  EXPECT_DOUBLE_EQ(link.gather_seconds(4e9, 4) - link.latency_s, (link.seconds(4e9, 4) - link.latency_s) / 2);
}

}  // namespace
}  // namespace papaya::model
