// make_plan, the one call: the budget kept, never slower than PAPAYA's best
// combination, the batch chosen, the plan file, and impossible budgets.
#include <gtest/gtest.h>

#include "model/parallel/data_parallel.h"
#include "model/plan.h"
#include "model/plan_space/predict.h"
#include "model/units.h"
#include "planner/planner.h"
#include "planner/variance.h"
#include "tests/planner/networks.h"
#include "tests/support/input_error.h"

namespace papaya::planner {
namespace {

struct Network {
  model::LayerModel model;
  model::Target target;
  double keep_peak_at_64 = 0;
};

Network gpt(int blocks, bool gpu) {
  Network s{testing::fitted(testing::gpt_like(blocks), gpu), {}, 0};
  s.target = model::profiled_target(s.model);
  s.keep_peak_at_64 = model::predict(s.model, s.target, model::expand_plan_name("keep", s.model.layout()), 64).peak_bytes;
  return s;
}

double between(const Network& s, double fraction) {
  return s.model.static_bytes + fraction * (s.keep_peak_at_64 - s.model.static_bytes);
}

TEST(MakePlan, FixedBatchKeepsTheBudgetAndBeatsEveryCombination) {
  for (const bool gpu : {false, true}) {
    const Network s = gpt(3, gpu);
    for (double fraction : {0.35, 0.5, 0.8}) {
      const double budget = between(s, fraction);
      const PlanResult r = make_plan(s.model, s.target, {budget, 64, std::nullopt});
      EXPECT_EQ(r.batch, 64);
      EXPECT_LE(r.estimate.peak_bytes, budget);
      // The plan, read back from its file, predicts the same.
      const model::Plan read =
          model::parse_plan(plan_document(r, s.model.layout()), s.model.layout(), s.model.network, "plan.json");
      const model::Estimate again = model::predict(s.model, s.target, read, 64);
      EXPECT_DOUBLE_EQ(again.peak_bytes, r.estimate.peak_bytes);
      EXPECT_DOUBLE_EQ(again.samples_per_s, r.estimate.samples_per_s);
      for (const GlobalRow& row : r.global.rows) {
        if (row.at_batch.peak_bytes > budget) continue;
        EXPECT_GE(r.estimate.samples_per_s, row.at_batch.samples_per_s * (1 - 1e-9)) << row.name;
      }
    }
  }
}

TEST(MakePlan, ChosenBatchBeatsEveryCombinationAtItsLargestBatch) {
  for (const bool gpu : {false, true}) {
    const Network s = gpt(3, gpu);
    for (double fraction : {0.35, 0.6}) {
      const double budget = between(s, fraction);
      const PlanResult r = make_plan(s.model, s.target, {budget, std::nullopt, std::nullopt});
      EXPECT_GE(r.batch, 1);
      EXPECT_LE(r.estimate.peak_bytes, budget);
      EXPECT_EQ(r.plan.batch, r.batch);
      const GlobalRow* best = r.global.fastest();
      ASSERT_NE(best, nullptr);
      EXPECT_GE(r.estimate.samples_per_s, best->best.samples_per_s * (1 - 1e-9)) << best->name << " at batch " << best->max_batch;
    }
  }
}

TEST(MakePlan, ThePlanFileSaysWhatWasPredicted) {
  const Network s = gpt(2, false);
  const PlanResult r = make_plan(s.model, s.target, {between(s, 0.5), 32, std::nullopt});
  const nlohmann::json doc = plan_document(r, s.model.layout());
  EXPECT_EQ(doc["papaya_plan"], 1);
  EXPECT_EQ(doc["batch"], 32);
  for (const char* key : {"batch", "peak_bytes", "samples_per_s", "budget_bytes"})
    EXPECT_TRUE(doc["predicted"].contains(key)) << key;
  EXPECT_EQ(doc["predicted"]["batch"], 32);
  EXPECT_DOUBLE_EQ(doc["predicted"]["budget_bytes"].get<double>(), between(s, 0.5));
}

TEST(MakePlan, VarianceBudget) {
  // A budget that recompute-all (lossless) fits, and lossy plans fit faster.
  const Network s = gpt(2, false);
  const auto peak = [&](const char* name) {
    return model::predict(s.model, s.target, model::expand_plan_name(name, s.model.layout()), 64).peak_bytes;
  };
  const double budget = peak("recompute-all") + 0.3 * (peak("keep") - peak("recompute-all"));
  const PlanResult free = make_plan(s.model, s.target, {budget, 64, std::nullopt});
  ASSERT_GT(free.variance, 0);
  const PlanResult held = make_plan(s.model, s.target, {budget, 64, free.variance / 4});
  EXPECT_LE(held.variance, free.variance / 4);
  EXPECT_LE(held.estimate.peak_bytes, budget);
  const model::PlanSpace space(s.model, s.target, 64);
  const VarianceProxy proxy(s.model, space);
  EXPECT_NEAR(proxy.of(space.assignment(held.plan)) / proxy.reference(), held.variance, 1e-12);
}

TEST(MakePlan, Deterministic) {
  const Network s = gpt(3, true);
  const PlanRequest request{between(s, 0.5), std::nullopt, std::nullopt};
  EXPECT_EQ(plan_document(make_plan(s.model, s.target, request), s.model.layout()),
            plan_document(make_plan(s.model, s.target, request), s.model.layout()));
}

TEST(MakePlan, ImpossibleBudgetsStateTheMinimum) {
  const Network s = gpt(2, false);
  const std::string static_bytes = model::format_bytes(s.model.static_bytes);
  std::string message = test_support::input_error_of([&] {
    make_plan(s.model, s.target, {s.model.static_bytes / 2, std::nullopt, std::nullopt});
  });
  EXPECT_NE(message.find(static_bytes), std::string::npos) << message;
  EXPECT_NE(message.find("weights, gradients and optimizer state"), std::string::npos) << message;

  // Just above the static bytes, below what batch 1 needs with anything.
  const GlobalTable at_one = search_global(s.model, s.target, s.model.static_bytes + 1, 1);
  const GlobalRow& lean = at_one.leanest();
  message = test_support::input_error_of([&] {
    make_plan(s.model, s.target, {s.model.static_bytes + 1, std::nullopt, std::nullopt});
  });
  EXPECT_NE(message.find("batch 1"), std::string::npos) << message;
  EXPECT_NE(message.find(lean.name + ": " + model::format_bytes(lean.at_batch.peak_bytes)), std::string::npos) << message;

  // A batch too large for the budget: the largest that fits is named.
  message = test_support::input_error_of([&] { make_plan(s.model, s.target, {between(s, 0.3), 4096, std::nullopt}); });
  EXPECT_NE(message.find("batch 4096 needs"), std::string::npos) << message;
  EXPECT_NE(message.find("fits"), std::string::npos) << message;

  // A ZeRO-3 rank of 4 holds a quarter of the static bytes: a budget below
  // the whole's plans; below its share, the share is named.
  model::Target sharded = s.target;
  model::set_data_parallel(sharded, {4, 3, "test link", {1e-5, 1e10, {}}, model::default_bucket_bytes});
  const double share = model::static_bytes_per_rank(s.model, sharded.data_parallel);
  ASSERT_LT(share, s.model.static_bytes / 3);
  EXPECT_NO_THROW(make_plan(s.model, sharded, {s.model.static_bytes * 0.9, std::nullopt, std::nullopt}));
  message = test_support::input_error_of([&] { make_plan(s.model, sharded, {share / 2, std::nullopt, std::nullopt}); });
  EXPECT_NE(message.find(model::format_bytes(share) + " a GPU"), std::string::npos) << message;
}

}  // namespace
}  // namespace papaya::planner
