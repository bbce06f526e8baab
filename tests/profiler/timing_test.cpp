// The torch-free timing parts: attributing device work to layers, the wall
// clock, and the figures read off a profile.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "profiler/kernel_attribution.h"
#include "profiler/summary.h"
#include "profiler/wall_clock_timer.h"

namespace papaya::profiler {
namespace {

TEST(KernelAttribution, SumsBusyTimePerExternalId) {
  // Correlations 1-2 were launched under external id 7, 3 under 9, 4 under none.
  const std::vector<ExternalCorrelation> correlations = {{1, 7}, {2, 7}, {3, 9}};
  const std::vector<DeviceActivity> activities = {
      {1, 1000, 3000},   // id 7: 2 us
      {2, 2000, 5000},   // id 7, overlapping the first (another stream): the union is 4 us
      {2, 9000, 10000},  // id 7 again (a copy): 1 us more
      {3, 6000, 6500},   // id 9
      {4, 7000, 8000},   // no external id
      {3, 0, 0},         // no timestamps: ignored
  };
  const auto busy = busy_seconds_by_external_id(activities, correlations);
  ASSERT_EQ(busy.size(), 3u);
  EXPECT_DOUBLE_EQ(busy.at(7), 5e-6);
  EXPECT_DOUBLE_EQ(busy.at(9), 0.5e-6);
  EXPECT_DOUBLE_EQ(busy.at(0), 1e-6);
  EXPECT_TRUE(busy_seconds_by_external_id({}, correlations).empty());
}

TEST(WallClockTimer, TimesBracketsAndSynchronizesAtEachMarker) {
  int synchronized = 0;
  WallClockTimer timer(2, [&] { ++synchronized; });
  EXPECT_EQ(timer.name(), "synchronized-wall-clock");
  timer.start_step();
  const auto outer_start = std::chrono::steady_clock::now();
  timer.begin(1, Pass::backward);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  timer.end(1, Pass::backward);
  const double outer_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - outer_start).count();
  timer.end(0, Pass::forward);  // never begun: counts nothing
  const std::vector<PassTimes> times = timer.finish_step();
  EXPECT_EQ(synchronized, 3);
  EXPECT_GE(times[1].backward_s, 0.019);
  EXPECT_LE(times[1].backward_s, outer_s);  // within the clock around it
  EXPECT_EQ(times[1].forward_s, 0);
  EXPECT_EQ(times[0].forward_s, 0);
  timer.start_step();
  EXPECT_EQ(timer.finish_step()[1].backward_s, 0);
  EXPECT_EQ(WallClockTimer(1, nullptr).name(), "wall-clock");
}

TEST(Summary, SavedBytesCountEachStorageOnceAndScaleWithTheBatch) {
  model::LayerProfile act, fc;
  act.path = "act";
  act.saved = {{"output", model::SlotKind::mask, "float32", 4, {8}, true, 8, "act:output", 32}};
  fc.path = "fc";
  fc.saved = {{"input", model::SlotKind::activation, "float32", 4, {8}, true, 8, "act:output", 32},  // shared
              {"table", model::SlotKind::stats, "float32", 4, {10}, false, 10, "fc:table", 40}};     // fixed size
  EXPECT_EQ(new_saved_bytes(act, 3), 96);
  EXPECT_EQ(new_saved_bytes(fc, 3), 40);
  model::Profile p;
  p.layers = {act, fc};
  EXPECT_EQ(saved_bytes(p, 5), 200);

  p.batches = {5, 6};
  p.iterations = {{5, false, 1, 0.01}, {6, true}};
  p.layers[0].measured = {{0.002, 0.003}, {}};
  p.layers[1].measured = {{0.001, 0.002}, {}};
  EXPECT_NEAR(layer_time_share(p, 0), 0.8, 1e-12);
  EXPECT_EQ(layer_time_share(p, 1), 0);
}

}  // namespace
}  // namespace papaya::profiler
