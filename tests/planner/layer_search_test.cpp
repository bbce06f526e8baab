// The per-layer search at one batch: safe, never worse than a whole-network
// combination, and optimal where every assignment can be tried.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "model/plan.h"
#include "model/plan_space/predict.h"
#include "planner/layer_program.h"
#include "planner/layer_search.h"
#include "planner/variance.h"
#include "tests/planner/networks.h"

namespace papaya::planner {
namespace {

struct Tried {
  std::vector<int> storage, segment;
  model::Estimate estimate;
};

// Every assignment of the space, evaluated.
std::vector<Tried> every_assignment(const model::PlanSpace& space) {
  std::vector<int> radix;
  for (size_t g = 0; g < space.storages().size(); ++g)
    radix.push_back(static_cast<int>(space.options(static_cast<int>(g)).size()));
  for (size_t s = 0; s < space.segments().size(); ++s) {
    radix.push_back(static_cast<int>(space.segment_cost(static_cast<int>(s)).input_options.size()) + 1);
  }
  std::vector<int> digit(radix.size(), 0);
  std::vector<Tried> all;
  while (true) {
    Tried t;
    t.storage.assign(digit.begin(), digit.begin() + static_cast<long>(space.storages().size()));
    for (size_t s = 0; s < space.segments().size(); ++s) t.segment.push_back(digit[space.storages().size() + s] - 1);
    t.estimate = space.evaluate(space.assignment(t.storage, t.segment));
    all.push_back(t);
    size_t k = 0;
    while (k < digit.size() && ++digit[k] == radix[k]) digit[k++] = 0;
    if (k == digit.size()) break;
  }
  return all;
}

const Tried* fastest_within(const std::vector<Tried>& all, double budget) {
  const Tried* best = nullptr;
  for (const Tried& t : all) {
    if (t.estimate.peak_bytes <= budget && (!best || t.estimate.samples_per_s > best->estimate.samples_per_s)) best = &t;
  }
  return best;
}

// Budgets spread evenly between the leanest assignment's peak and keep's.
std::vector<double> budgets_between(const std::vector<Tried>& all, int count) {
  double low = all.front().estimate.peak_bytes, high = all.front().estimate.peak_bytes;  // [0]: keep
  for (const Tried& t : all) low = std::min(low, t.estimate.peak_bytes);
  std::vector<double> budgets;
  for (int i = 0; i <= count; ++i) budgets.push_back(low + (high - low) * i / count);
  budgets.push_back(low - 1);  // nothing fits
  return budgets;
}

// The search finds the fastest of every assignment within each budget, and
// at some budgets that is a per-layer mix no whole-network combination is.
void expect_matches_brute_force(const model::LayerModel& m, int64_t batch, int budgets) {
  const model::PlanSpace space(m, model::profiled_target(m), batch);
  const std::vector<Tried> all = every_assignment(space);
  int mixes = 0;
  for (double budget : budgets_between(all, budgets)) {
    const Tried* best = fastest_within(all, budget);
    const auto found = search_layers(m, space, budget);
    ASSERT_EQ(found.has_value(), best != nullptr) << "budget " << budget;
    if (!best) continue;
    EXPECT_LE(found->estimate.peak_bytes, budget);
    EXPECT_GE(found->estimate.samples_per_s, best->estimate.samples_per_s * (1 - 1e-9))
        << "budget " << budget << ": the best of " << all.size() << " assignments peaks at " << best->estimate.peak_bytes;
    mixes += found->combination.empty();
  }
  EXPECT_GE(mixes, budgets / 3) << "too few budgets where a per-layer mix is the answer to test the search";
}

TEST(LayerSearch, MatchesBruteForceOnASmallNetwork) {
  expect_matches_brute_force(testing::fitted(testing::tiny_block(), false), 8, 24);
}

TEST(LayerSearch, MatchesBruteForceWithSwapping) {
  expect_matches_brute_force(testing::fitted(testing::tiny_block(), true), 8, 12);
}

TEST(LayerSearch, MatchesBruteForceOnTwoSegments) {
  expect_matches_brute_force(testing::fitted(testing::random_chain(6, 3), false), 16, 12);
}

// Safe, and never slower than a whole-network combination that fits, on
// several networks, batches and random budgets, on the profiled CPU, a
// profiled GPU and a catalog GPU (a what-if from a CPU profile).
TEST(LayerSearch, ExactPeakWithinRandomBudgets) {
  std::mt19937 random(7);
  for (const char* machine : {"cpu", "gpu", "A100-40GB"}) {
    for (const auto& spec : {testing::gpt_like(2), testing::random_chain(12, 1), testing::random_chain(20, 2)}) {
      const model::LayerModel m = testing::fitted(spec, std::string(machine) == "gpu");
      const model::Target target =
          std::string(machine) == "A100-40GB" ? model::make_target(m, machine) : model::profiled_target(m);
      for (int64_t batch : {4, 32}) {
        const model::PlanSpace space(m, target, batch);
        const double keep = model::predict(m, target, model::expand_plan_name("keep", m.layout()), batch).peak_bytes;
        std::uniform_real_distribution<double> fraction(0.4, 1.0);
        for (int i = 0; i < 8; ++i) {
          const double budget = m.static_bytes + fraction(random) * (keep - m.static_bytes);
          const auto found = search_layers(m, space, budget);
          std::string fitting;
          for (const auto& name : model::plan_names(m, target)) {
            const model::Estimate e = space.evaluate(space.assignment(model::expand_plan_name(name, m.layout())));
            if (e.peak_bytes > budget) continue;
            fitting = name;
            ASSERT_TRUE(found) << machine << ", batch " << batch << ", budget " << budget << ": " << name << " fits";
            EXPECT_GE(found->estimate.samples_per_s, e.samples_per_s * (1 - 1e-9))
                << machine << ", batch " << batch << ": " << name;
          }
          if (!found) continue;
          EXPECT_LE(found->estimate.peak_bytes, budget);
          EXPECT_DOUBLE_EQ(space.evaluate(found->assignment).peak_bytes, found->estimate.peak_bytes);
        }
      }
    }
  }
}

// A layer that saves hundreds of tensors, as an LSTM saves each time step's,
// before a layer whose large output makes the peak: the search keeps the
// budget, beats every whole-network combination that fits, and weighs at
// most 1024 choices a level. (This synthetic level stays small; the LSTM
// archive's, which outgrew the cap and took minutes, is measured by
// bench/torchscript_recommend.sh.)
TEST(LayerSearch, ALayerOfHundredsOfTensors) {
  std::vector<model::SavedTensorProfile> steps;
  for (int t = 0; t < 300; ++t) {
    const std::string slot = "t" + std::to_string(t);
    steps.push_back(testing::saved(slot, model::SlotKind::activation, 64 + 16 * (t % 7), 4, "rnn:" + slot));
  }
  const auto input = [](const std::string& path) {
    return std::vector{testing::saved("input", model::SlotKind::activation, 64, 4, path + ":input")};
  };
  const model::LayerModel m = testing::fitted(testing::chain({{"rnn", "module", "", steps, 4 * 64, {}},
                                                              {"wide", "linear", "", input("wide"), 4 * 40000, {}},
                                                              {"head", "linear", "", input("head"), 64, {}}},
                                                             64 << 10),
                                              false);
  const model::Target target = model::profiled_target(m);
  const model::PlanSpace space(m, target, 8);
  const double budget = space.evaluate(space.assignment(model::expand_plan_name("quantize-4", m.layout()))).peak_bytes;
  ProgramSettings settings;
  settings.budget_bytes = budget;
  const LayerProgram program = ProgramBuilder(m, space, VarianceProxy(m, space)).build(settings);
  for (const Level& level : program.program.levels) EXPECT_LE(level.choices.size(), 1024u);
  const auto found = search_layers(m, space, budget);
  ASSERT_TRUE(found);
  EXPECT_LE(found->estimate.peak_bytes, budget);
  for (const auto& name : model::plan_names(m, target)) {
    const model::Estimate e = space.evaluate(space.assignment(model::expand_plan_name(name, m.layout())));
    if (e.peak_bytes <= budget) EXPECT_GE(found->estimate.samples_per_s, e.samples_per_s * (1 - 1e-9)) << name;
  }
}

TEST(LayerSearch, KeepWhenItFits) {
  const model::LayerModel m = testing::fitted(testing::gpt_like(1), false);
  const model::PlanSpace space(m, model::profiled_target(m), 8);
  const auto found = search_layers(m, space, 1e12);
  ASSERT_TRUE(found);
  const model::Plan plan = space.plan(found->assignment, "x");
  EXPECT_TRUE(plan.tensors.empty());
  EXPECT_TRUE(plan.segments.empty());
}

TEST(LayerSearch, Deterministic) {
  const model::LayerModel m = testing::fitted(testing::gpt_like(3), true);
  const model::PlanSpace space(m, model::profiled_target(m), 16);
  const double budget = 0.6 * model::predict(m, space.target(), model::expand_plan_name("keep", m.layout()), 16).peak_bytes;
  const auto a = search_layers(m, space, budget), b = search_layers(m, space, budget);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(model::plan_to_json(space.plan(a->assignment, "x"), m.layout()),
            model::plan_to_json(space.plan(b->assignment, "x"), m.layout()));
}

TEST(LayerSearch, VarianceBudgetIsRespected) {
  const model::LayerModel m = testing::fitted(testing::gpt_like(2), false);
  const model::PlanSpace space(m, model::profiled_target(m), 16);
  const VarianceProxy proxy(m, space);
  // A budget that recompute-all (lossless) fits, and lossy plans fit faster.
  const auto peak = [&](const char* name) {
    return model::predict(m, space.target(), model::expand_plan_name(name, m.layout()), 16).peak_bytes;
  };
  const double budget = peak("recompute-all") + 0.3 * (peak("keep") - peak("recompute-all"));
  const auto free = search_layers(m, space, budget);
  ASSERT_TRUE(free);
  ASSERT_GT(free->variance, 0) << "the test needs a budget where lossy strategies pay";
  double last = free->estimate.samples_per_s;
  for (double fraction : {free->variance / 2, free->variance / 10, 0.0}) {
    LayerSearchSettings settings;
    settings.variance_budget = fraction;
    const auto found = search_layers(m, space, budget, settings);
    ASSERT_TRUE(found) << fraction;
    EXPECT_LE(found->variance, fraction);
    EXPECT_NEAR(found->variance, proxy.of(found->assignment) / proxy.reference(), 1e-12);
    EXPECT_LE(found->estimate.peak_bytes, budget);
    EXPECT_LE(found->estimate.samples_per_s, last * (1 + 1e-9)) << "a tighter variance budget cannot be faster";
    last = found->estimate.samples_per_s;
  }
}

}  // namespace
}  // namespace papaya::planner
