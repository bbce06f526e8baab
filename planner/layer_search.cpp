#include "planner/layer_search.h"

#include <algorithm>
#include <cmath>

#include "planner/layer_program.h"
#include "planner/variance.h"

namespace papaya::planner {
namespace {

struct Found {
  LayerSearchResult result;
  double program_seconds = 0;  // what the program expected the plan to add
};

class Search {
 public:
  Search(const model::LayerModel& model, const model::PlanSpace& space, double budget, const LayerSearchSettings& settings)
      : model_(model),
        space_(space),
        budget_(budget),
        settings_(settings),
        variance_(model, space),
        keep_(space.assignment(std::vector<int>(space.storages().size(), 0), std::vector<int>(space.segments().size(), -1))),
        keep_estimate_(space.evaluate(keep_)),
        builder_(model, space, variance_),
        correction_(space.points().size(), 0.0),
        tightened_(space.points().size(), 0) {}

  std::optional<LayerSearchResult> run() {
    if (keep_estimate_.peak_bytes <= budget_) return LayerSearchResult{keep_, keep_estimate_, 0, "keep"};
    if (space_.optimizer_peak_bytes() > budget_) return std::nullopt;  // no plan lowers it
    std::optional<Found> found = within_variance(space_.target().has_host_link());
    if (found && swaps(found->result.assignment) &&
        found->result.estimate.seconds - keep_estimate_.seconds > 1.01 * found->program_seconds) {
      const std::optional<Found> unswapped = within_variance(false);
      if (unswapped && unswapped->result.estimate.samples_per_s > found->result.estimate.samples_per_s) found = unswapped;
    }
    std::optional<LayerSearchResult> best;
    if (found) best = found->result;
    const std::vector<Combination> own = settings_.combinations ? std::vector<Combination>{} : combinations(model_, space_);
    for (const auto& [name, a] : settings_.combinations ? *settings_.combinations : own) {
      const model::Estimate e = space_.evaluate(a);
      if (e.peak_bytes > budget_ || (best && e.samples_per_s < best->estimate.samples_per_s)) continue;
      const LayerSearchResult global{a, e, variance_fraction(a), name};
      const bool ties_a_mix = best && e.samples_per_s == best->estimate.samples_per_s && best->combination.empty();
      if (within(global.variance) && (!best || e.samples_per_s > best->estimate.samples_per_s || ties_a_mix)) best = global;
    }
    return best;
  }

 private:
  bool within(double variance) const { return !settings_.variance_budget || variance <= *settings_.variance_budget; }
  bool within(const Found& f) const { return within(f.result.variance); }
  double variance_fraction(const model::Assignment& a) const {
    return variance_.reference() > 0 ? variance_.of(a) / variance_.reference() : 0;
  }

  std::optional<Found> within_variance(bool allow_swap) {
    if (settings_.variance_budget && *settings_.variance_budget <= 0) return verified(0, allow_swap, false);
    std::optional<Found> free = verified(0, allow_swap);
    if (!free || within(*free)) return free;
    // Price variance: find a weight that brings it within the budget...
    double low = 0, high = keep_estimate_.seconds / std::max(variance_.reference(), 1e-30);
    std::optional<Found> at_high = verified(high, allow_swap);
    for (int doubling = 0; at_high && !within(*at_high) && doubling < 40; ++doubling) {
      low = high;
      high *= 8;
      at_high = verified(high, allow_swap);
    }
    if (!at_high || !within(*at_high)) return std::nullopt;
    // ...then the smallest such weight, within a factor of 1.1.
    while (low == 0 || high / low > 1.1) {
      const double mid = low == 0 ? high / 8 : std::sqrt(low * high);
      std::optional<Found> at_mid = verified(mid, allow_swap);
      if (at_mid && within(*at_mid)) {
        high = mid;
        at_high = at_mid;
      } else {
        low = mid;
      }
      if (low == 0 && high < 1e-30) break;
    }
    return at_high;
  }

  // Solve, evaluate, tighten where the exact peak is over the budget.
  std::optional<Found> verified(double weight, bool allow_swap, bool allow_lossy = true) {
    for (int round = 0; round < settings_.rounds; ++round) {
      const LayerProgram program = builder_.build({budget_, correction_, weight, allow_swap, allow_lossy});
      const std::optional<Choice> choice = solve(program.program, settings_.cells);
      if (!choice) return std::nullopt;
      const model::Assignment a = program.assignment(space_, *choice);
      const model::Estimate e = space_.evaluate(a);
      if (e.peak_bytes <= budget_) {
        return Found{{a, e, variance_fraction(a), ""}, program.seconds(*choice)};
      }
      tighten(a, program.unattributed_bytes);
    }
    return std::nullopt;
  }

  void tighten(const model::Assignment& a, double unattributed) {
    const std::vector<double> bytes = space_.timeline(a);
    const auto& points = space_.points();
    for (size_t p = 0; p < points.size(); ++p) {
      const auto& point = points[p];
      if (point.phase == model::Phase::recompute && !a.segments[static_cast<size_t>(point.segment)].recompute) continue;
      const double over = bytes[p] + unattributed - budget_;
      if (over <= 0) continue;
      // The excess, a byte more, doubled each time the same point is over again:
      // the program may have missed more there than this answer shows.
      correction_[p] += (over + 1) * std::pow(2.0, tightened_[p]++);
    }
  }

  const model::LayerModel& model_;
  const model::PlanSpace& space_;
  const double budget_;
  const LayerSearchSettings settings_;
  const VarianceProxy variance_;
  const model::Assignment keep_;
  const model::Estimate keep_estimate_;
  const ProgramBuilder builder_;
  std::vector<double> correction_;
  std::vector<int> tightened_;  // per point: how often it was over
};

}  // namespace

bool swaps(const model::Assignment& a) {
  return std::any_of(a.slots.begin(), a.slots.end(), [](const model::TensorStrategy& s) { return s.swap; }) ||
         std::any_of(a.segments.begin(), a.segments.end(),
                     [](const model::SegmentStrategy& s) { return s.recompute && s.input.swap; });
}

std::optional<LayerSearchResult> search_layers(const model::LayerModel& model, const model::PlanSpace& space, double budget_bytes,
                                               const LayerSearchSettings& settings) {
  return Search(model, space, budget_bytes, settings).run();
}

}  // namespace papaya::planner
