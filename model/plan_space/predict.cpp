#include "model/plan_space/predict.h"

#include <algorithm>

namespace papaya::model {

std::optional<std::string> extrapolation_note(const LayerModel& model, int64_t batch) {
  if (model.batches.empty()) return std::nullopt;
  const int profiled = *std::max_element(model.batches.begin(), model.batches.end());
  const int timed = std::max(profiled, model.probe_batch);
  if (batch <= 2 * static_cast<int64_t>(timed)) return std::nullopt;
  const std::string largest = model.probe_batch > profiled
                                  ? "the largest batch its layers were timed at (" + std::to_string(timed) + ", probed alone)"
                                  : "the largest profiled batch (" + std::to_string(timed) + ")";
  return "batch " + std::to_string(batch) + " is " + std::to_string(batch / timed) + "x " + largest +
         ": peak memory extrapolates surely, samples/s less so (papaya validate measures it; a profile at batches nearer " +
         std::to_string(batch) + " narrows it)";
}

double default_budget(const Target& target) { return default_budget_fraction * target.memory_bytes; }

Estimate predict(const LayerModel& model, const Target& target, const Plan& plan, int64_t batch) {
  const PlanSpace space(model, target, batch);
  return space.evaluate(space.assignment(plan));
}

int64_t max_batch(const LayerModel& model, const Target& target, const Plan& plan, double budget_bytes) {
  const PlanSpace base(model, target, 1);
  return max_batch(base, base.assignment(plan), budget_bytes);
}

int64_t max_batch(const PlanSpace& space, const Assignment& a, double budget_bytes) {
  const auto peak = [&](int64_t batch) { return space.at_batch(batch).evaluate(a).peak_bytes; };
  const auto fits = [&](int64_t batch) { return peak(batch) <= budget_bytes; };
  const double one = peak(1);
  if (one > budget_bytes) return 0;
  // The peak is nearly linear in the batch: start at the line through 1 and 2,
  // widen a bracket around it, then bisect.
  const double slope = peak(2) - one;
  const double line = slope > 0 ? 1 + (budget_bytes - one) / slope : static_cast<double>(max_batch_searched);
  const int64_t guess = static_cast<int64_t>(std::clamp(line, 1.0, static_cast<double>(max_batch_searched)));
  int64_t low, high, step = std::max<int64_t>(1, guess / 64);
  if (fits(guess)) {
    low = guess;
    high = std::min(low + step, max_batch_searched + 1);
    while (high <= max_batch_searched && fits(high)) {
      low = high;
      step *= 2;
      high = std::min(low + step, max_batch_searched + 1);
    }
    if (high > max_batch_searched) return low;
  } else {
    high = guess;
    low = std::max<int64_t>(1, high - step);
    while (low > 1 && !fits(low)) {
      high = low;
      step *= 2;
      low = std::max<int64_t>(1, high - step);
    }
  }
  while (high - low > 1) {
    const int64_t mid = low + (high - low) / 2;
    (fits(mid) ? low : high) = mid;
  }
  return low;
}

std::vector<std::string> plan_names(const LayerModel& model, const Target& target) {
  return global_plan_names(target.has_host_link(), has_attention_cores(model.layout()));
}

std::string peak_location(const LayerModel& model, const Estimate& estimate) {
  if (estimate.peak_in_optimizer_step) return "optimizer step";
  return std::string(to_string(estimate.peak_at.phase)) + " " + model.layers[static_cast<size_t>(estimate.peak_at.layer)].path;
}

}  // namespace papaya::model
