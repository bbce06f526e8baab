#include "planner/planner.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "model/error.h"
#include "model/parallel/data_parallel.h"
#include "model/plan_space/plan_space.h"
#include "model/units.h"
#include "planner/layer_search.h"

namespace papaya::planner {
namespace {

constexpr int scan_cells = 256;  // the byte grid while comparing batches; the chosen one is solved at full resolution
constexpr int scan_points = 8;   // batches on the first geometric grid

// A search's answer at one batch.
struct Candidate {
  LayerSearchResult found;
  int64_t batch = 0;
};

bool faster(const Candidate& a, const std::optional<Candidate>& b) {
  return !b || a.found.estimate.samples_per_s > b->found.estimate.samples_per_s;
}

class Planner {
 public:
  Planner(const model::LayerModel& model, const model::Target& target, const PlanRequest& request)
      : model_(model), target_(target), request_(request), base_(model, target, 1), combinations_(combinations(model, base_)) {}

  PlanResult run() {
    check_budget();
    const GlobalTable global = search_global(model_, target_, request_.budget_bytes, request_.batch);
    const std::optional<Candidate> best =
        request_.batch ? layers_at(*request_.batch, LayerSearchSettings{}.cells) : at_chosen_batch(global);
    if (!best) nothing_fits(global);
    const model::PlanSpace space = base_.at_batch(best->batch);
    const bool per_layer = best->found.combination.empty();
    PlanResult result;
    result.plan = space.plan(best->found.assignment, per_layer ? "per-layer" : best->found.combination);
    result.batch = best->batch;
    result.estimate = best->found.estimate;
    result.variance = best->found.variance;
    result.per_layer = per_layer;
    result.global = global;
    result.hardware = target_.name;
    result.data_parallel = target_.data_parallel;
    result.request = request_;
    return result;
  }

 private:
  void check_budget() const {
    if (!(request_.budget_bytes > 0))
      throw InputError("budget " + model::format_bytes(request_.budget_bytes) + ": a memory budget is positive");
    target_.check_budget(request_.budget_bytes);
    if (request_.variance_budget && !(*request_.variance_budget >= 0)) {
      throw InputError("variance budget " + std::to_string(*request_.variance_budget) +
                       ": a fraction of quantize-2's variance is >= 0");
    }
    // A data-parallel rank holds its share of them (ZeRO).
    const double static_bytes = model::static_bytes_per_rank(model_, target_.data_parallel);
    if (request_.budget_bytes < static_bytes) {
      throw InputError("budget " + model::format_bytes(request_.budget_bytes) +
                       " is below the weights, gradients and optimizer state alone (" + model::format_bytes(static_bytes) +
                       (target_.data_parallel.active() ? " a GPU" : "") + ")");
    }
  }

  // The per-layer search at one batch (cached: the batch search revisits).
  std::optional<Candidate> layers_at(int64_t batch, int cells) {
    const auto key = std::make_pair(batch, cells);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    const model::PlanSpace space = base_.at_batch(batch);
    LayerSearchSettings settings;
    settings.cells = cells;
    settings.variance_budget = request_.variance_budget;
    settings.combinations = &combinations_;
    std::optional<Candidate> found;
    if (auto r = search_layers(model_, space, request_.budget_bytes, settings)) found = Candidate{*r, batch};
    return cache_[key] = found;
  }

  std::optional<Candidate> at_chosen_batch(const GlobalTable& global) {
    // Below keep's largest batch keep is the fastest plan, and its samples/s
    // there is at most what it reaches at that batch.
    int64_t low = std::max<int64_t>(1, global.keep().max_batch), high = low;
    for (const auto& row : global.rows) high = std::max(high, row.max_batch);
    std::optional<Candidate> best;
    int64_t best_batch = 0;
    const auto try_batch = [&](int64_t b) {
      const std::optional<Candidate> c = layers_at(b, scan_cells);
      if (c && faster(*c, best)) {
        best = c;
        best_batch = b;
      }
      return c.has_value();
    };
    std::vector<int64_t> grid;
    for (int i = 0; i < scan_points; ++i) {
      const double t = scan_points == 1 ? 0 : static_cast<double>(i) / (scan_points - 1);
      grid.push_back(std::llround(static_cast<double>(low) * std::pow(static_cast<double>(high) / static_cast<double>(low), t)));
    }
    if (const GlobalRow* row = global.fastest(request_.variance_budget)) grid.push_back(row->max_batch);
    std::sort(grid.begin(), grid.end());
    grid.erase(std::unique(grid.begin(), grid.end()), grid.end());
    for (int64_t b : grid) try_batch(b);
    if (!best) return std::nullopt;
    // Further up while a larger batch still fits and helps (the per-layer
    // search can fit batches no whole-network combination does).
    for (int64_t b = best_batch; best_batch == b && b >= high;) {
      b = std::max(b + 1, b * 5 / 4);
      if (!try_batch(b)) break;
    }
    // Narrow down between the best batch's neighbours on the grid while that
    // still gains 0.1%.
    for (int step = 0; step < 8; ++step) {
      int64_t left = 0, right = 0;
      for (const auto& [key, c] : cache_) {
        const int64_t b = key.first;
        if (b < best_batch) left = std::max(left, b);
        if (b > best_batch && (right == 0 || b < right)) right = b;
      }
      const double before = best->found.estimate.samples_per_s;
      bool tried = false;
      for (int64_t b : {left > 0 ? (left + best_batch) / 2 : 0, right > 0 ? (best_batch + right) / 2 : 0}) {
        if (b > 0 && b != best_batch && b != left && b != right) {
          try_batch(b);
          tried = true;
        }
      }
      if (!tried || best->found.estimate.samples_per_s < before * 1.001) break;
    }
    // The chosen batch at full resolution.
    if (const auto full = layers_at(best_batch, LayerSearchSettings{}.cells); full && faster(*full, best)) best = full;
    return best;
  }

  [[noreturn]] void nothing_fits(const GlobalTable& global) const {
    const std::string budget = model::format_bytes(request_.budget_bytes);
    const GlobalRow& lean = global.leanest();
    const std::string batch = std::to_string(global.batch);
    if (lean.at_batch.peak_bytes <= request_.budget_bytes && request_.variance_budget) {
      throw InputError("no plan within " + budget + " at batch " + batch + " keeps the gradient variance within " +
                       std::to_string(*request_.variance_budget) +
                       " of quantize-2's (raise the variance budget or the memory budget)");
    }
    std::string message = "budget " + budget + " is below what batch " + batch + " needs with the most memory-saving plan, " +
                          lean.name + ": " + model::format_bytes(lean.at_batch.peak_bytes);
    if (global.batch_fixed) {
      int64_t largest = 0;
      for (const auto& row : global.rows) largest = std::max(largest, row.max_batch);
      if (largest > 0) message += " (batch " + std::to_string(largest) + " fits; or let the planner choose the batch)";
    }
    throw InputError(message);
  }

  const model::LayerModel& model_;
  const model::Target& target_;
  const PlanRequest request_;
  const model::PlanSpace base_;
  const std::vector<Combination> combinations_;
  std::map<std::pair<int64_t, int>, std::optional<Candidate>> cache_;
};

}  // namespace

PlanResult make_plan(const model::LayerModel& model, const model::Target& target, const PlanRequest& request) {
  return Planner(model, target, request).run();
}

PlanResult make_plan_choosing_stage(const model::LayerModel& model, const model::Target& target, const PlanRequest& request,
                                    const std::vector<int>& zero_stages) {
  std::optional<PlanResult> best;
  std::optional<InputError> last_error;
  for (const int stage : zero_stages) {
    model::Target at_stage = target;
    at_stage.data_parallel.zero_stage = stage;
    try {
      PlanResult r = make_plan(model, at_stage, request);
      if (!best || r.estimate.samples_per_s > best->estimate.samples_per_s) best = std::move(r);
    } catch (const InputError& e) {
      last_error = e;
    }
  }
  if (!best) throw *last_error;
  return *best;
}

nlohmann::json plan_document(const PlanResult& result, const model::NetworkLayout& layout) {
  nlohmann::json doc = model::plan_to_json(result.plan, layout);
  doc["description"] = std::string("papaya plan: ") + (result.per_layer ? "per-layer search" : "whole-network combination") +
                       " under " + model::format_bytes(result.request.budget_bytes) + " on " + result.hardware;
  doc["predicted"] = {{"batch", result.batch},
                      {"peak_bytes", result.estimate.peak_bytes},
                      {"samples_per_s", result.estimate.samples_per_s},
                      {"seconds", result.estimate.seconds},
                      {"host_bytes", result.estimate.host_bytes},
                      {"budget_bytes", result.request.budget_bytes},
                      {"variance", result.variance},
                      {"hardware", result.hardware}};
  if (const model::DataParallel& world = result.data_parallel; world.active()) {
    doc["predicted"]["gpus"] = world.ranks;
    doc["predicted"]["zero"] = world.zero_stage;
    doc["predicted"]["link"] = world.link_name;
  }
  return doc;
}

}  // namespace papaya::planner
