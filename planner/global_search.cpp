#include "planner/global_search.h"

#include "model/plan.h"
#include "model/plan_space/predict.h"
#include "planner/variance.h"

namespace papaya::planner {

const GlobalRow* GlobalTable::fastest(std::optional<double> variance_budget) const {
  const GlobalRow* best = nullptr;
  const auto rate = [&](const GlobalRow& r) { return batch_fixed ? r.at_batch.samples_per_s : r.best.samples_per_s; };
  for (const GlobalRow& r : rows) {
    const bool fits = batch_fixed ? r.at_batch.peak_bytes <= budget_bytes : r.max_batch > 0;
    if (!fits || (variance_budget && r.variance > *variance_budget)) continue;
    if (!best || rate(r) > rate(*best)) best = &r;
  }
  return best;
}

const GlobalRow& GlobalTable::leanest() const {
  const GlobalRow* lean = &rows.front();
  for (const GlobalRow& r : rows) {
    if (r.at_batch.peak_bytes < lean->at_batch.peak_bytes) lean = &r;
  }
  return *lean;
}

std::vector<Combination> combinations(const model::LayerModel& model, const model::PlanSpace& space) {
  const model::NetworkLayout layout = model.layout();
  std::vector<Combination> out;
  for (const auto& name : model::plan_names(model, space.target()))
    out.push_back({name, space.assignment(model::expand_plan_name(name, layout))});
  return out;
}

GlobalTable search_global(const model::LayerModel& model, const model::Target& target, double budget_bytes,
                          std::optional<int64_t> batch) {
  GlobalTable table;
  table.budget_bytes = budget_bytes;
  table.batch = batch.value_or(1);
  table.batch_fixed = batch.has_value();
  const model::PlanSpace space(model, target, table.batch);
  const VarianceProxy variance(model, space);
  for (const auto& [name, a] : combinations(model, space)) {
    GlobalRow row;
    row.name = name;
    row.at_batch = space.evaluate(a);
    row.variance = variance.reference() > 0 ? variance.of(a) / variance.reference() : 0;
    row.max_batch = model::max_batch(space, a, budget_bytes);
    if (row.max_batch > 0) row.best = space.at_batch(row.max_batch).evaluate(a);
    table.rows.push_back(row);
  }
  const GlobalRow& keep = table.keep();
  for (GlobalRow& r : table.rows) {
    r.helps = r.max_batch > 0 && (keep.max_batch == 0 || r.best.samples_per_s > keep.best.samples_per_s);
  }
  return table;
}

}  // namespace papaya::planner
