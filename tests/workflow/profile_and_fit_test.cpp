// workflow::profile_and_fit: the stages it reports, the batches and scaling
// it chooses, and what it refuses before profiling; workflow::plan: the
// planner's answer with the target planned for, reported as one stage.
#include "workflow/profile_and_fit.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/catalog/network_config.h"
#include "model/plan.h"
#include "planner/planner.h"
#include "tests/support/input_error.h"
#include "tests/workflow/recording_reporter.h"
#include "workflow/plan.h"

namespace papaya::workflow {
namespace {

ProfileAndFitRequest quick_request(const std::string& network) {
  ProfileAndFitRequest request;
  request.network = model::load_network_config(network);
  request.quick = true;
  return request;
}

// gpt-tiny profiled once for the tests that plan with it.
const Profiled& gpt_tiny() {
  static const Profiled profiled = [] {
    SilentReporter quiet;
    return profile_and_fit(quick_request("gpt-tiny"), quiet);
  }();
  return profiled;
}

TEST(ProfileAndFit, ProfilesAtTheDefaultBatchesThenFitsReportingEachStage) {
  RecordingReporter reporter;
  const ProfileAndFitRequest request = quick_request("mlp-tiny");
  const Profiled profiled = profile_and_fit(request, reporter);
  EXPECT_EQ(profiled.batches, default_profile_batches(request.network));
  EXPECT_EQ(reporter.stages(), (std::vector<std::string>{"profiling", "fitting"}));
  EXPECT_EQ(reporter.calls.back(), "end");
  EXPECT_FALSE(profiled.model.layers.empty());
  const int s = request.network.smallest_batch();
  EXPECT_EQ(
      profiled.how.rfind(
          "at batches " + std::to_string(s) + ", " + std::to_string(2 * s) + ", " + std::to_string(4 * s) + ", 2 steps each", 0),
      0u)
      << profiled.how;
}

// Three fractions of the shape, each profiled and fitted, and the network
// modelled whole from them: the same layers as profiled whole.
TEST(ProfileAndFit, AShapeCutInPartsProfilesThreeFractionsAndModelsTheWhole) {
  RecordingReporter reporter;
  ProfileAndFitRequest request = quick_request("gpt-tiny");
  request.shape_parts = 4;
  const Profiled scaled = profile_and_fit(request, reporter);
  EXPECT_EQ(reporter.stages(), (std::vector<std::string>{"profiling at 1/4", "fitting", "profiling at 2/4", "fitting",
                                                         "profiling at 3/4", "fitting"}));
  ASSERT_FALSE(reporter.calls.empty());
  EXPECT_EQ(reporter.calls.front().rfind("notice ", 0), 0u) << "the scaling is said before the work";
  EXPECT_NE(scaled.how.find("1/4, 2/4, 3/4 of its"), std::string::npos) << scaled.how;
  const model::LayerModel& whole = gpt_tiny().model;
  ASSERT_EQ(scaled.model.layers.size(), whole.layers.size());
  for (size_t i = 0; i < whole.layers.size(); ++i) EXPECT_EQ(scaled.model.layers[i].path, whole.layers[i].path);
}

TEST(ProfileAndFit, RefusesBeforeProfilingWhatCannotBeModelled) {
  RecordingReporter reporter;
  ProfileAndFitRequest fp8 = quick_request("gpt-tiny");
  fp8.precision = "fp8-tensorwise";
  fp8.hardware = "A100-80GB";
  EXPECT_NE(test_support::input_error_of([&] { profile_and_fit(fp8, reporter); }).find("A100-80GB"), std::string::npos);
  ProfileAndFitRequest three_parts = quick_request("gpt-tiny");
  three_parts.shape_parts = 3;
  EXPECT_NE(test_support::input_error_of([&] { profile_and_fit(three_parts, reporter); }).find("4 parts or more"),
            std::string::npos);
  EXPECT_TRUE(reporter.stages().empty()) << "nothing was profiled";
}

TEST(WorkflowPlan, IsThePlannersChoiceWithTheTargetPlannedForReportedAsOneStage) {
  const Profiled& profiled = gpt_tiny();
  planner::PlanRequest request;
  request.batch = 8;
  request.budget_bytes = 1 << 30;  // within any machine's memory, far above gpt-tiny's peak
  RecordingReporter reporter;
  const Planned planned = plan(profiled.model, profiled.target, request, {0}, reporter);
  const planner::PlanResult direct = planner::make_plan_choosing_stage(profiled.model, profiled.target, request, {0});
  EXPECT_EQ(model::plan_to_json(planned.result.plan), model::plan_to_json(direct.plan));
  EXPECT_EQ(planned.result.batch, 8);
  EXPECT_EQ(planned.target.data_parallel.ranks, planned.result.data_parallel.ranks);
  EXPECT_EQ(reporter.stages(), std::vector<std::string>{"planning"});
  EXPECT_EQ(reporter.calls.back(), "end");
}

TEST(WorkflowPlan, NothingWithinTheBudgetIsRefused) {
  const Profiled& profiled = gpt_tiny();
  planner::PlanRequest request;
  request.budget_bytes = 1;
  SilentReporter quiet;
  EXPECT_NE(test_support::input_error_of([&] { plan(profiled.model, profiled.target, request, {0}, quiet); }), "");
}

}  // namespace
}  // namespace papaya::workflow
