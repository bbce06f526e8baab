// The CUPTI wrapper where CUPTI is installed: it records on a GPU, and says
// why not (as an error, not a crash) where there is no driver or device.
#include <gtest/gtest.h>

#include <stdexcept>

#include "profiler/cupti_activity.h"
#include "profiler/cupti_timer.h"

namespace papaya::profiler {
namespace {

TEST(Cupti, StartsOrSaysWhy) {
  try {
    cupti::start();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("CUPTI ", 0), 0u) << e.what();
    GTEST_SKIP() << "CUPTI cannot record here: " << e.what();
  }
  // No CUDA work was launched: nothing is recorded, under any id.
  cupti::set_external_id(3);
  cupti::set_external_id(0);
  const cupti::Records records = cupti::take();
  EXPECT_TRUE(records.activities.empty());
  cupti::stop();
}

TEST(Cupti, TimerWithoutWorkTimesNothing) {
  try {
    CuptiTimer timer(2);
    timer.start_step();
    timer.begin(1, Pass::forward);
    timer.end(1, Pass::forward);
    const std::vector<PassTimes> times = timer.finish_step();
    ASSERT_EQ(times.size(), 2u);
    EXPECT_EQ(times[1].forward_s, 0);
  } catch (const std::runtime_error& e) {
    GTEST_SKIP() << "CUPTI cannot record here: " << e.what();
  }
}

}  // namespace
}  // namespace papaya::profiler
