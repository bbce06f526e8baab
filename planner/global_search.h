#pragma once
// PAPAYA's table: every whole-network combination of memory optimizations on
// a target (model::plan_names: checkpointing x compression x inversion x
// swapping), with its largest batch within a memory budget, its samples/s
// there, and PAPAYA's verdict — does it beat keep, each compared at its own
// largest batch that fits.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/catalog/target.h"
#include "model/layer_model.h"
#include "model/plan_space/plan_space.h"

namespace papaya::planner {

struct GlobalRow {
  std::string name;
  int64_t max_batch = 0;     // the largest batch within the budget; 0: batch 1 does not fit
  model::Estimate best;      // at max_batch (PAPAYA compares there); empty when 0
  model::Estimate at_batch;  // at GlobalTable::batch
  double variance = 0;       // the variance proxy (variance.h) at GlobalTable::batch, as a fraction of quantize-2 everywhere
  bool helps = false;        // fits, and beats keep at keep's largest batch (always, if keep fits no batch)
};

struct GlobalTable {
  double budget_bytes = 0;
  int64_t batch = 1;            // the batch asked for, or 1
  bool batch_fixed = false;     // a batch was asked for: rows are compared at it
  std::vector<GlobalRow> rows;  // plan_names(target) order: keep first

  const GlobalRow& keep() const { return rows.front(); }
  // The fastest row that fits (at `batch` if it is fixed, else at its largest
  // batch) within `variance_budget` (a fraction), if any does.
  const GlobalRow* fastest(std::optional<double> variance_budget = std::nullopt) const;
  // The row with the smallest peak at `batch`: the most memory-saving combination.
  const GlobalRow& leanest() const;
};

// The whole-network combinations of the space's target as its assignments
// (the same at every batch).
struct Combination {
  std::string name;
  model::Assignment assignment;
};
std::vector<Combination> combinations(const model::LayerModel& model, const model::PlanSpace& space);

// `batch`: compare at this batch (at_batch, fastest); nullopt: each row at its largest.
GlobalTable search_global(const model::LayerModel& model, const model::Target& target, double budget_bytes,
                          std::optional<int64_t> batch);

}  // namespace papaya::planner
