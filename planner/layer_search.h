#pragma once
// The per-layer search at one batch size: the fastest assignment of an
// option to every storage and a choice to every segment (recompute or not,
// and its input's form) whose exact peak is within a memory budget, and
// optionally whose gradient-variance proxy (variance.h) is within a budget.
//
// The search solves the level program (level_dp.h, layer_program.h), then
// evaluates its answer exactly (PlanSpace::evaluate). The program's bytes
// are exact wherever decisions concern different storages (a GELU/SiLU input
// and its consumer's storage are one decision); where a storage saved both
// inside and outside a recomputed segment meets that segment's recompute,
// the exact peak may be higher: then every point found over the budget gets
// its excess (doubled each time it is over again) added to what it needs,
// and the program is solved again — at most `rounds` times. Only an
// assignment whose exact peak is within the budget is ever returned.
//
// Variance: minimizing seconds + w * variance, with w multiplied by 8 until the
// answer is within the variance budget and then bisected (geometrically) to
// the smallest such w: the Lagrangian relaxation of the variance budget. A
// budget of 0 leaves the lossy options out instead.
//
// Swapping: the program prices the stall of swap copies one layer at a time;
// where the exact step time of an answer that swaps is more than 1% above
// what the program expected (copies queueing on the link), the search is run
// again without swapping and the faster answer kept.
//
// Last, every whole-network combination (model::plan_names) that fits both
// budgets is evaluated, and the fastest kept if it beats the search's answer
// (or ties it): so the result is never slower than PAPAYA's best at this batch.
#include <optional>
#include <string>
#include <vector>

#include "model/layer_model.h"
#include "model/plan_space/plan_space.h"
#include "planner/global_search.h"

namespace papaya::planner {

struct LayerSearchSettings {
  int cells = 1024;                       // buckets of the program's byte grid (level_dp.h)
  int rounds = 8;                         // solve, evaluate, tighten
  std::optional<double> variance_budget;  // a fraction of quantize-2 everywhere
  // planner::combinations of the space, when a caller searching several
  // batches has them already (they do not depend on the batch); else made here.
  const std::vector<Combination>* combinations = nullptr;
};

struct LayerSearchResult {
  model::Assignment assignment;
  model::Estimate estimate;  // exact
  double variance = 0;       // a fraction of quantize-2 everywhere
  std::string combination;   // the whole-network combination it is, or "" (a per-layer mix)
};

// nullopt: nothing found within the budgets at this batch. Keep, if it fits.
std::optional<LayerSearchResult> search_layers(const model::LayerModel& model, const model::PlanSpace& space, double budget_bytes,
                                               const LayerSearchSettings& settings = {});

// Whether an assignment swaps anything to host memory.
bool swaps(const model::Assignment& assignment);

}  // namespace papaya::planner
