#pragma once
// Predictions of a layer model for whole plans: peak memory, samples/s and
// the largest batch that fits a memory budget, on the profiled machine or a
// catalog entry. Each is PlanSpace::evaluate (plan_space.h) of one plan.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/catalog/target.h"
#include "model/layer_model.h"
#include "model/plan.h"
#include "model/plan_space/plan_space.h"

namespace papaya::model {

// The budget when none is given: PAPAYA's 80% of the device memory, which
// leaves room for the CUDA context and the caching allocator's reserve.
constexpr double default_budget_fraction = 0.8;
double default_budget(const Target& target);

Estimate predict(const LayerModel& model, const Target& target, const Plan& plan, int64_t batch);
// Where an estimate's peak is, in words: "backward blocks.3.mlp.fc2", "optimizer step".
std::string peak_location(const LayerModel& model, const Estimate& estimate);

// A note where `batch` is more than twice the largest batch the layers were
// timed at (profiled, or probed): memory extrapolates surely (allocator bytes
// are linear in the batch), time less so, since the time per sample changes
// with the batch as caches fill and kernels change (on a CPU, 15-30% between
// batch 4 and 32 without a probe: bench/RESULTS.md).
std::optional<std::string> extrapolation_note(const LayerModel& model, int64_t batch);

// The largest batch whose predicted peak is at most `budget_bytes`; 0 when
// batch 1 does not fit. The peak grows with the batch (every stored tensor
// and every fitted figure does), nearly linearly: the search starts where the
// line through batches 1 and 2 meets the budget and bisects a bracket around
// it; it stops at max_batch_searched.
constexpr int64_t max_batch_searched = int64_t{1} << 30;
int64_t max_batch(const LayerModel& model, const Target& target, const Plan& plan, double budget_bytes);
// The same for an assignment of a plan space (at any batch), for a caller
// that holds one already.
int64_t max_batch(const PlanSpace& space, const Assignment& assignment, double budget_bytes);

// The whole-network plans to compare for a model on a target (PAPAYA's
// table): with swap only where the target has a host link, with
// recompute-attention only where the network has attention cores.
std::vector<std::string> plan_names(const LayerModel& model, const Target& target);

}  // namespace papaya::model
