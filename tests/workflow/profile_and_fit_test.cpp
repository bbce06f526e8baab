// workflow::profile_and_fit: the stages it reports, the batches and scaling
// it chooses, and what it refuses before profiling; workflow::plan: the
// planner's answer with the target planned for, reported as one stage.
#include "workflow/profile_and_fit.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "model/catalog/hardware.h"
#include "model/catalog/network_config.h"
#include "model/fit/plan_step_calibration.h"
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

// Per profiling stage: the calibration plans whose steps ran in it, and
// whether its progress bar ended full.
struct StageSteps {
  std::set<std::string> plans;
  bool ended_full = false;
};
std::map<std::string, StageSteps> steps_by_stage(const RecordingReporter& reporter) {
  const model::CalibrationPlans& calibration = model::calibration_plans();
  std::map<std::string, StageSteps> out;
  std::string stage;
  for (const std::string& call : reporter.calls) {
    if (call.rfind("begin ", 0) == 0) stage = call.substr(6);
    if (call.rfind("update ", 0) != 0 || stage.rfind("profiling", 0) != 0) continue;
    const std::string count = call.substr(7, call.find(' ', 7) - 7);
    const size_t slash = count.find('/');
    for (const std::string& plan : {calibration.codec, calibration.recompute}) {
      if (call.find(" " + plan + " at batch ") != std::string::npos) out[stage].plans.insert(plan);
    }
    out[stage].ended_full = count.substr(0, slash) == count.substr(slash + 1);
  }
  return out;
}

// Three fractions of the shape, each profiled and fitted, and the network
// modelled whole from them: the same layers as profiled whole. The whole is
// timed as the largest fraction is, so only its profile times the
// calibration plans' steps (minutes of a large network's fractions).
TEST(ProfileAndFit, AShapeCutInPartsProfilesThreeFractionsAndModelsTheWhole) {
  RecordingReporter reporter;
  ProfileAndFitRequest request = quick_request("gpt-tiny");
  request.shape_parts = 4;
  const Profiled scaled = profile_and_fit(request, reporter);
  EXPECT_EQ(reporter.stages(), (std::vector<std::string>{"profiling at 1/4", "fitting", "profiling at 2/4", "fitting",
                                                         "profiling at 3/4", "fitting"}));
  const std::map<std::string, StageSteps> steps = steps_by_stage(reporter);
  for (const char* stage : {"profiling at 1/4", "profiling at 2/4", "profiling at 3/4"}) {
    ASSERT_EQ(steps.count(stage), 1u) << stage;
    EXPECT_EQ(steps.at(stage).plans.size(), std::string(stage) == "profiling at 3/4" ? 2u : 0u) << stage;
    EXPECT_TRUE(steps.at(stage).ended_full) << stage;
  }
  ASSERT_FALSE(reporter.calls.empty());
  EXPECT_EQ(reporter.calls.front().rfind("notice ", 0), 0u) << "the scaling is said before the work";
  EXPECT_NE(scaled.how.find("1/4, 2/4, 3/4 of its"), std::string::npos) << scaled.how;
  const model::LayerModel& whole = gpt_tiny().model;
  ASSERT_EQ(scaled.model.layers.size(), whole.layers.size());
  for (size_t i = 0; i < whole.layers.size(); ++i) EXPECT_EQ(scaled.model.layers[i].path, whole.layers[i].path);
}

// Priced on catalog GPUs alone, a CPU profile's codec speed is never read
// (catalog_target assumes the GPU's): its step goes, the recompute's stays,
// and the progress bar still ends full.
TEST(ProfileAndFit, ACpuProfileForCatalogGpusAloneTimesNoCodecStep) {
  RecordingReporter reporter;
  ProfileAndFitRequest request = quick_request("mlp-tiny");
  request.catalog_targets_only = true;
  const Profiled profiled = profile_and_fit(request, reporter);
  const std::map<std::string, StageSteps> steps = steps_by_stage(reporter);
  ASSERT_EQ(steps.count("profiling"), 1u);
  EXPECT_EQ(steps.at("profiling").plans, std::set<std::string>{model::calibration_plans().recompute});
  EXPECT_TRUE(steps.at("profiling").ended_full);
  EXPECT_FALSE(profiled.model.codecs.empty()) << "the codecs are measured still, as every profile has them";
  // What the step would calibrate, a codec's seconds a call, does not reach a catalog GPU.
  model::LayerModel slower = profiled.model;
  for (model::CodecMeasurement& c : slower.codecs) c.pack_seconds_per_call += 1, c.unpack_seconds_per_call += 1;
  const model::HardwareSpec h100 = model::load_hardware("H100-SXM-80GB");
  const model::Target as_profiled = model::catalog_target(profiled.model, h100), as_slower = model::catalog_target(slower, h100);
  ASSERT_EQ(as_profiled.codecs.size(), as_slower.codecs.size());
  for (size_t i = 0; i < as_profiled.codecs.size(); ++i) {
    EXPECT_EQ(as_profiled.codecs[i].pack_seconds(1e6), as_slower.codecs[i].pack_seconds(1e6));
    EXPECT_EQ(as_profiled.codecs[i].unpack_seconds(1e6), as_slower.codecs[i].unpack_seconds(1e6));
  }
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
  EXPECT_EQ(model::plan_to_json(planned.result.plan, profiled.model.layout()),
            model::plan_to_json(direct.plan, profiled.model.layout()));
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
