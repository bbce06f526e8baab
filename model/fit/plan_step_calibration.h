#pragma once
// The per-call costs of a codec and of a recomputed segment in a whole step,
// calibrated to the profile's plan steps (profile.h, PlanStep). A codec's own
// benchmark calls it in a tight loop on one warm tensor; in a step each call
// also goes through the MOM path of its layer (a custom autograd function,
// the stored copy's bookkeeping) with cold caches, and a recomputed segment
// through the checkpoint's own function, random state and nested backward.
// Small networks, whose steps are microseconds per layer, were predicted up
// to 30% fast under quantization and recomputation without it.
#include <string>
#include <vector>

#include "model/layer_model.h"
#include "model/profile.h"

namespace papaya::model {

// The whole-network plans a profile times a step under (Profile::plan_steps),
// named from the strategy table: one storing every slot through a codec
// (quantize at its widest listed bits), one recomputing every segment.
struct CalibrationPlans {
  std::string codec;      // "quantize-8"
  std::string recompute;  // "recompute-all"
};
const CalibrationPlans& calibration_plans();

// For each plan step: what it took beyond the keep step paired with it (the
// batch's keep iteration in profiles without one: PlanStep), less
// what `model` predicts it takes beyond keep, spread over the calls the plan
// makes (codec packs and unpacks; recomputed segments), and added to each
// call's cost in `model` (codecs' seconds per call; segments' fixed recompute
// seconds). Never lowers a cost. Says what it added in `notes`.
void calibrate_to_plan_steps(const Profile& profile, LayerModel& model, std::vector<std::string>& notes);

}  // namespace papaya::model
