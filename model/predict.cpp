#include "model/predict.h"

namespace papaya::model {

double default_budget(const Target& target) { return default_budget_fraction * target.memory_bytes; }

Estimate predict(const LayerModel& model, const Target& target, const Plan& plan, int64_t batch) {
  const PlanSpace space(model, target, batch);
  return space.evaluate(space.assignment(plan));
}

int64_t max_batch(const LayerModel& model, const Target& target, const Plan& plan, double budget_bytes) {
  const auto fits = [&](int64_t batch) { return predict(model, target, plan, batch).peak_bytes <= budget_bytes; };
  if (!fits(1)) return 0;
  int64_t low = 1, high = 2;  // fits(low); find a high that does not fit
  while (high <= max_batch_searched && fits(high)) {
    low = high;
    high *= 2;
  }
  if (high > max_batch_searched) return low;
  while (high - low > 1) {
    const int64_t mid = low + (high - low) / 2;
    (fits(mid) ? low : high) = mid;
  }
  return low;
}

std::vector<std::string> plan_names(const Target& target) { return global_plan_names(target.has_host_link()); }

}  // namespace papaya::model
