#include "workflow/plan.h"

namespace papaya::workflow {

Planned plan(const model::LayerModel& model, const model::Target& target, const planner::PlanRequest& request,
             const std::vector<int>& zero_stages, Reporter& reporter) {
  reporter.begin("planning");
  reporter.update(0, 1, "whole-network combinations and the per-layer search");
  Planned out{planner::make_plan_choosing_stage(model, target, request, zero_stages), target};
  out.target.data_parallel = out.result.data_parallel;
  reporter.update(1, 1);
  reporter.end();
  return out;
}

}  // namespace papaya::workflow
