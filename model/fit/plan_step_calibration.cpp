#include "model/fit/plan_step_calibration.h"

#include <algorithm>
#include <cstdio>
#include <functional>

#include "model/catalog/target.h"
#include "model/plan.h"
#include "model/plan_space/plan_space.h"
#include "model/strategy_table.h"

namespace papaya::model {
namespace {

// A second per call: large enough that the predicted step's rounding does not
// blur the count of calls it gives.
constexpr double probe_seconds = 1;

double predicted_seconds(const LayerModel& model, const std::string& plan, int batch) {
  const PlanSpace space(model, profiled_target(model), batch);
  return space.evaluate(space.assignment(expand_plan_name(plan, model.layout()))).seconds;
}

// Adds `seconds` to every call that `add` reaches, where the plan step took
// longer than predicted: the calls counted as how much the predicted step
// grows with one more second per call.
void calibrate(const Profile& profile, const PlanStep& step, LayerModel& model,
               const std::function<void(LayerModel&, double)>& add, const char* what, std::vector<std::string>& notes) {
  const auto iteration = std::find_if(profile.iterations.begin(), profile.iterations.end(),
                                      [&](const IterationMeasurement& it) { return it.batch == step.batch && !it.oom; });
  if (iteration == profile.iterations.end()) return;
  const double keep_s = step.keep_iteration_s > 0 ? step.keep_iteration_s : iteration->iteration_s;
  const double base = predicted_seconds(model, step.plan, step.batch);
  LayerModel probed = model;
  add(probed, probe_seconds);
  const double calls = (predicted_seconds(probed, step.plan, step.batch) - base) / probe_seconds;
  if (calls < 0.5) return;
  const double missing = (step.iteration_s - keep_s) - (base - predicted_seconds(model, "keep", step.batch));
  if (missing <= 0) return;
  add(model, missing / calls);
  char note[160];
  std::snprintf(note, sizeof note, "%s: +%.1f us per call, from a %s step at batch %d (%.0f calls)", what, missing / calls * 1e6,
                step.plan.c_str(), step.batch, calls);
  notes.emplace_back(note);
}

}  // namespace

const CalibrationPlans& calibration_plans() {
  static const CalibrationPlans plans = {listed_names(row_of(Form::quantized)).front(), row_of(Form::recomputed).plan_term};
  return plans;
}

void calibrate_to_plan_steps(const Profile& profile, LayerModel& model, std::vector<std::string>& notes) {
  for (const PlanStep& step : profile.plan_steps) {
    if (step.plan == calibration_plans().codec && !model.codecs.empty()) {
      calibrate(
          profile, step, model,
          [](LayerModel& m, double seconds) {
            for (CodecMeasurement& c : m.codecs) {
              c.pack_seconds_per_call += seconds;
              c.unpack_seconds_per_call += seconds;
            }
          },
          "codec calls in a step", notes);
    } else if (step.plan == calibration_plans().recompute) {
      calibrate(
          profile, step, model,
          [](LayerModel& m, double seconds) {
            for (SegmentFit& s : m.segments) s.recompute_seconds.fixed += seconds;
          },
          "segment recomputations in a step", notes);
    }
  }
}

}  // namespace papaya::model
