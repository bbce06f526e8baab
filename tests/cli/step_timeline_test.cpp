// The report's step (cli/report/step_timeline.h): its bands make each point's bytes
// and the peak, and its plan by layer adds up to what the plan does to the
// whole step.
#include "cli/report/step_timeline.h"

#include <gtest/gtest.h>

#include "model/fit/fit_profile.h"
#include "model/plan_space/plan_space.h"
#include "model/plan_space/predict.h"
#include "tests/support/synthetic_profile.h"

namespace papaya::cli {
namespace {

model::LayerModel gpt(int blocks) {
  return model::fit_profile(testing::make_profile(testing::gpt_like(blocks)), "synthetic").model;
}

model::Plan plan_named(const model::LayerModel& m, const std::string& name) { return model::expand_plan_name(name, m.layout()); }

// The bands at the point the passes peak hold the peak, but for what no
// layer accounts for.
TEST(StepTimeline, TheBandsHoldThePeak) {
  const model::LayerModel m = gpt(2);
  const model::Target target = model::profiled_target(m);
  for (const char* name : {"keep", "quantize-4", "recompute-all", "recompute-all+quantize-4+invert"}) {
    const nlohmann::json step = step_timeline(m, target, plan_named(m, name), 16);
    ASSERT_FALSE(step["peak_in_optimizer_step"].get<bool>()) << name;
    const size_t at = step["peak_point"].get<size_t>();
    double held = 0;
    for (const auto& band : step["bands"]) {
      ASSERT_EQ(band["bytes"].size(), step["labels"].size()) << name;
      held += band["bytes"][at].get<double>();
    }
    EXPECT_NEAR(held + m.unattributed_peak.at(16), step["peak_bytes"].get<double>(), 1e-6) << name;
    EXPECT_EQ(step["labels"][at].get<std::string>(), step["peak_at"].get<std::string>()) << name;
  }
}

// The time added by layer adds up to the plan's step against keep's; the
// bytes held fewer, to what the plan frees where every storage is held (the
// first backward point: nothing dequantized there).
TEST(StepTimeline, ThePlanByLayerAddsUpToTheStep) {
  const model::LayerModel m = gpt(2);
  const model::Target target = model::profiled_target(m);
  const model::PlanSpace space(m, target, 16);
  const size_t steady = m.layers.size();
  const auto keep = space.assignment(plan_named(m, "keep"));
  for (const char* name : {"quantize-8", "quantize-4", "recompute-all"}) {
    const auto a = space.assignment(plan_named(m, name));
    double bytes = 0, seconds = 0;
    const nlohmann::json step = step_timeline(m, target, plan_named(m, name), 16);
    for (const auto& row : step["layers"]) {
      bytes += row["bytes_saved"].get<double>();
      seconds += row["seconds_added"].get<double>();
    }
    EXPECT_NEAR(seconds, space.evaluate(a).seconds - space.evaluate(keep).seconds, 1e-12) << name;
    if (std::string(name) != "recompute-all") {
      EXPECT_NEAR(bytes, space.timeline(keep)[steady] - space.timeline(a)[steady], 1e-6) << name;
    }
    EXPECT_GT(bytes, 0) << name;
  }
  // Recomputed, each segment is a row, its layers' are not; the LM head's
  // recomputed log-probabilities, outside them, last.
  const nlohmann::json rows = step_timeline(m, target, plan_named(m, "recompute-all"), 16)["layers"];
  ASSERT_EQ(rows.size(), space.segments().size() + 1);
  for (size_t s = 0; s < space.segments().size(); ++s) {
    EXPECT_EQ(rows[s]["layer"].get<std::string>(), space.segments()[s].path);
    EXPECT_EQ(rows[s]["tensors"].get<std::string>(), "recomputed");
  }
  EXPECT_EQ(rows.back()["tensors"].get<std::string>(), "logprobs: recompute");
}

}  // namespace
}  // namespace papaya::cli
