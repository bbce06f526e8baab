// workflow::plan_layouts and fewest_gpus_that_fit: the links assumed, what
// they refuse, and the fewest GPUs as the fewest on which a layout fits.
#include "workflow/layout_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "model/catalog/network_config.h"
#include "model/plan.h"
#include "model/plan_space/predict.h"
#include "tests/support/input_error.h"
#include "workflow/profile_and_fit.h"

namespace papaya::workflow {
namespace {

const model::LayerModel& profiled(const std::string& network) {
  static std::map<std::string, model::LayerModel> models;
  auto found = models.find(network);
  if (found == models.end()) {
    ProfileAndFitRequest request;
    request.network = model::load_network_config(network);
    request.quick = true;
    SilentReporter quiet;
    found = models.emplace(network, profile_and_fit(request, quiet).model).first;
  }
  return found->second;
}

ParallelRequest on_h100(int gpus, double budget_bytes) {
  ParallelRequest request;
  request.hardware = "H100-SXM-80GB";
  request.budget_bytes = budget_bytes;
  request.question.gpus = gpus;
  // One plan at one micro-batch, the optimizer on the GPU: more GPUs are
  // the only way down.
  request.question.plans = {"keep"};
  request.question.micro_batch = 1;
  request.question.offload_optimizer = false;
  return request;
}

TEST(LayoutPlan, NodesOfA100sTalkOverHdrInfiniBandNewerOnesOverNdr) {
  EXPECT_EQ(inter_node_default("NVLink-3"), "InfiniBand-HDR");
  EXPECT_EQ(inter_node_default("NVLink-4"), "InfiniBand-NDR");
}

// Data-parallel ranks exchange over the link their group spans, as a
// layout's data-parallel group does: one node's link up to a node, the link
// between nodes beyond (said where assumed); so a layout of data parallelism
// alone is priced as the same GPUs planned layer by layer, on any count.
TEST(LayoutPlan, DataParallelRanksArePricedAsTheirLayoutWithinANodeAndAcrossNodes) {
  const model::LayerModel& gpt = profiled("gpt-tiny");
  for (const int gpus : {8, 16}) {
    ParallelRequest request;
    request.hardware = "H100-SXM-80GB";
    request.question.gpus = gpus;
    model::Target target = model::make_target(gpt, request.hardware);
    apply_data_parallel(target, gpt, request, 1);
    EXPECT_EQ(target.data_parallel.link_name, gpus == 8 ? "NVLink-4" : "InfiniBand-NDR");
    const bool said = std::any_of(target.notes.begin(), target.notes.end(), [](const std::string& note) {
      return note.find("between nodes: InfiniBand-NDR assumed") != std::string::npos;
    });
    EXPECT_EQ(said, gpus == 16);
    model::ParallelLayout layout = model::ParallelLayout::data_parallel(gpus, 1);
    layout.micro_batch = 4;
    for (const std::string plan : {"keep", "recompute-all"}) {
      const model::Estimate ranks = model::predict(gpt, target, model::expand_plan_name(plan, gpt.layout()), 4);
      const model::LayoutEstimate laid = predict_layout(gpt, request, layout, {plan}).estimates.front();
      EXPECT_DOUBLE_EQ(laid.peak_bytes, ranks.peak_bytes) << gpus << " GPUs, " << plan;
      EXPECT_NEAR(laid.iteration_seconds, ranks.seconds, 1e-9 * ranks.seconds) << gpus << " GPUs, " << plan;
    }
  }
}

TEST(LayoutPlan, RefusesUnknownHardwareABudgetAboveItsMemoryAndANetworkThatIsNoTransformer) {
  const model::LayerModel& gpt = profiled("gpt-tiny");
  ParallelRequest unknown = on_h100(2, 1e9);
  unknown.hardware = "no-such-gpu";
  EXPECT_NE(test_support::input_error_of([&] { plan_layouts(gpt, unknown); }).find("no-such-gpu"), std::string::npos);
  EXPECT_NE(test_support::input_error_of([&] { plan_layouts(gpt, on_h100(2, 200e9)); }), "");
  SilentReporter silent;
  EXPECT_NE(test_support::input_error_of([&] { fewest_gpus_that_fit(profiled("mlp-tiny"), on_h100(1, 1e9), silent, 8); }), "");
}

// The fewest GPUs answer with a layout that fits; half as many have none.
TEST(LayoutPlan, TheFewestGpusFitAndHalfAsManyDoNot) {
  const model::LayerModel& gpt = profiled("gpt-tiny");
  const LayoutPlanned one = plan_layouts(gpt, on_h100(1, 70e9));
  ASSERT_FALSE(one.answer.best.empty()) << one.answer.why;
  // A budget below what one GPU needs, so that more GPUs must share the
  // state or the activations.
  ASSERT_GT(one.answer.best.front().peak_bytes, 0);
  const double budget = 0.9 * one.answer.best.front().peak_bytes;
  SilentReporter silent;
  const FewestGpus fewest = fewest_gpus_that_fit(gpt, on_h100(1, budget), silent, 64);
  ASSERT_TRUE(fewest.planned.has_value()) << "nothing fits 64 GPUs";
  const int gpus = fewest.planned->answer.best.front().layout.gpus();
  EXPECT_GT(gpus, 1);
  EXPECT_LE(fewest.planned->answer.best.front().peak_bytes, budget);
  const LayoutPlanned half = plan_layouts(gpt, on_h100(gpus / 2, budget));
  EXPECT_TRUE(half.answer.best.empty()) << gpus / 2 << " GPUs fit";
}

// Gradients reduced after backward are priced so, on every layout, and
// said: the iteration is longer by what the buckets hid.
TEST(LayoutPlan, GradientsReducedAfterBackwardAreSaidAndPriced) {
  const model::LayerModel& gpt = profiled("gpt-tiny");
  model::ParallelLayout layout;
  layout.data = 4, layout.micro_batch = 2;
  ParallelRequest request = on_h100(4, 60e9);
  const LayoutPredicted overlapped = predict_layout(gpt, request, layout, {"keep"});
  request.overlap_grad_reduce = false;
  const LayoutPredicted after = predict_layout(gpt, request, layout, {"keep"});
  const auto says = [](const LayoutPredicted& p) {
    for (const std::string& note : p.setting.notes) {
      if (note.find("reduced after backward") != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_FALSE(says(overlapped));
  EXPECT_TRUE(says(after));
  EXPECT_TRUE(overlapped.estimates.front().overlap_grad_reduce);
  EXPECT_FALSE(after.estimates.front().overlap_grad_reduce);
  EXPECT_GE(after.estimates.front().iteration_seconds, overlapped.estimates.front().iteration_seconds);
}

}  // namespace
}  // namespace papaya::workflow
