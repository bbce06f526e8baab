#include "cli/auto_plan.h"

#include <iostream>

#include "cli/progress.h"
#include "model/fit_profile.h"
#include "profiler/profiler.h"

namespace papaya::cli {

const std::vector<int>& auto_plan_batches() {
  static const std::vector<int> batches = {1, 2, 4};
  return batches;
}

Profiled profile_and_fit(const AutoPlanRequest& request) {
  profiler::ProfileOptions options;
  options.network = request.network;
  options.seq_len = request.seq_len;
  options.profile_blocks = request.profile_blocks;
  options.device = request.device;
  options.precision = request.precision;
  options.batches = request.batches;
  options.on_warning = [](const std::string& message) { std::cerr << "papaya: warning: " << message << "\n"; };
  model::Profile profile;
  {
    Progress progress("profiling");
    options.on_progress = [&](int done, int total, const std::string& note) { progress.update(done, total, note); };
    profile = profiler::profile_network(options);
  }
  Profiled out;
  {
    Progress progress("fitting");
    progress.update(0, 1, "per-layer curves");
    out.model = model::fit_profile(profile, "profile of " + profile.network).model;
    progress.update(1, 1);
  }
  out.target = model::make_target(out.model, request.hardware);
  return out;
}

planner::PlanResult plan_with_progress(const Profiled& profiled, const planner::PlanRequest& request) {
  Progress progress("planning");
  progress.update(0, 1, "whole-network combinations and the per-layer search");
  planner::PlanResult result = planner::make_plan(profiled.model, profiled.target, request);
  progress.update(1, 1);
  return result;
}

}  // namespace papaya::cli
