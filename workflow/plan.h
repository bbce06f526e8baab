#pragma once
// Planning as the commands do it: the planner at each ZeRO stage to
// consider, and the target as planned for, at the stage chosen.
#include <vector>

#include "model/catalog/target.h"
#include "model/layer_model.h"
#include "planner/planner.h"
#include "workflow/reporter.h"

namespace papaya::workflow {

struct Planned {
  planner::PlanResult result;  // the plan, its batch and its stage
  model::Target target;        // the target with the data parallelism planned for
};

// The fastest plan within `request` for `target`'s ranks at each stage of
// `zero_stages` (one rank: {0}); InputError where nothing fits.
Planned plan(const model::LayerModel& model, const model::Target& target, const planner::PlanRequest& request,
             const std::vector<int>& zero_stages, Reporter& reporter);

}  // namespace papaya::workflow
