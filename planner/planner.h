#pragma once
// papaya's planner: the plan to train with under a memory budget, in one call.
//
//   const planner::PlanResult r = planner::make_plan(model, target, {budget_bytes});
//   model::write_json_file("plan.json", planner::plan_document(r, model.layout()));  // what `papaya train --plan FILE` runs
//
// It runs the per-layer search (layer_search.h: a strategy per stored tensor
// and a choice per segment, never slower than a whole-network combination
// at the same batch) at the asked batch, or at the batch where it finds the
// most samples/s: batches from keep's largest to the largest any
// whole-network combination fits, on a geometric grid with the fastest
// combination's largest batch on it, refined around the best and further up
// while that keeps helping. So the answer is never slower than PAPAYA's best
// whole-network combination, which PAPAYA's table (global_search.h) beside
// it shows with every other. Every returned plan's exact predicted peak is
// within the budget.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/catalog/target.h"
#include "model/layer_model.h"
#include "model/plan.h"
#include "planner/global_search.h"

namespace papaya::planner {

struct PlanRequest {
  double budget_bytes = 0;
  std::optional<int64_t> batch;           // plan at this batch; nullopt: choose the batch
  std::optional<double> variance_budget;  // a fraction of quantize-2 everywhere (variance.h); nullopt: none
};

struct PlanResult {
  model::Plan plan;  // every non-keep tensor and segment by exact key, with the batch
  int64_t batch = 0;
  model::Estimate estimate;           // exact, at `batch`
  double variance = 0;                // a fraction of quantize-2 everywhere
  bool per_layer = true;              // false: a whole-network combination (plan.name) was as fast
  GlobalTable global;                 // PAPAYA's table under the same budget (at the asked batch, if any)
  std::string hardware;               // the target's name
  model::DataParallel data_parallel;  // the target's ranks: batch and peak per rank, samples/s of all
  PlanRequest request;
};

// Throws InputError when nothing fits: a budget below the weights, gradients
// and optimizer state, or below what the asked batch (or batch 1) needs with
// the most memory-saving whole-network combination, stating that minimum; or
// a variance budget no plan within the memory budget meets.
PlanResult make_plan(const model::LayerModel& model, const model::Target& target, const PlanRequest& request);

// make_plan for `target`'s data-parallel ranks at each ZeRO stage of
// `zero_stages`: the plan, per-rank batch and stage with the most samples/s
// (the lower stage on a tie). Throws make_plan's InputError of the last stage
// where none fits.
PlanResult make_plan_choosing_stage(const model::LayerModel& model, const model::Target& target, const PlanRequest& request,
                                    const std::vector<int>& zero_stages);

// The plan file: model::plan_to_json(plan) and what was predicted for it
// ("predicted": batch, peak_bytes, samples_per_s, seconds, budget_bytes,
// variance, hardware, and with data parallelism gpus, zero, link).
nlohmann::json plan_document(const PlanResult& result, const model::NetworkLayout& layout);

}  // namespace papaya::planner
