// A mixture's alike experts priced as few layers give the answers of every
// expert priced on its own: the same peaks on every layout and plan (but for
// the allocator's rounding of the tensors a layer stands for, once rather
// than each), and on a GPU the same times.
#include "model/alike_experts.h"

#include <gtest/gtest.h>

#include <set>

#include "model/catalog/hardware.h"
#include "model/catalog/network_config.h"
#include "model/catalog/shape_fraction.h"
#include "model/catalog/target.h"
#include "model/fit/shape_scaling.h"
#include "model/layout_pricing/layout_pricer.h"
#include "model/parallel/tensor_split.h"
#include "model/plan.h"
#include "model/plan_space/plan_space.h"
#include "tests/support/quick_fit.h"

namespace papaya::model {
namespace {

// Mixtral-tiny with 8 experts a block, routed as the modelling commands
// route them: balanced, or the last expert with `busiest` of the routings.
NetworkConfig eight_experts_config(double busiest = 1.0 / 8) {
  NetworkConfig config = load_network_config("mixtral-tiny");
  config.document["moe"]["experts"] = 8;
  return with_expert_routing(config, busiest);
}

LayerModel eight_experts(double busiest = 1.0 / 8) { return profiler::quick_fit(eight_experts_config(busiest)); }

ClusterLinks links() {
  return {8, "NVLink-4", "InfiniBand-NDR", LinkFit{10e-6, 300e9, std::nullopt}, LinkFit{30e-6, 50e9, std::nullopt}};
}

std::vector<ParallelLayout> layouts() {
  std::vector<ParallelLayout> out(6);
  out[0].micro_batch = 4;
  out[1].data = 2, out[1].zero_stage = 3, out[1].micro_batch = 2, out[1].micro_batches = 2;
  out[2].expert = 2, out[2].data = 2, out[2].micro_batch = 2;
  out[3].tensor = 2, out[3].sequence = true, out[3].micro_batch = 4;
  out[4].pipeline = 2, out[4].micro_batch = 2, out[4].micro_batches = 4;
  out[5].data = 2, out[5].zero_stage = 1, out[5].micro_batch = 2, out[5].offload_optimizer = true;
  return out;
}

// Each expert's time curve max(a, k·b) + c is fitted on its own; their sum
// is such a curve only where none has a floor a, which the collapse takes as
// summed: with the floors cleared, the times compare exactly too.
LayerModel without_floors(LayerModel m) {
  for (LayerFit& l : m.layers) l.forward_seconds.floor = l.backward_seconds.floor = 0;
  return m;
}

bool same(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)) + 1e-12; }

void expect_priced_alike(const LayerModel& profiled, const std::string& hardware, const std::vector<std::string>& plans) {
  const LayerModel whole = without_floors(profiled);
  const bool gpu = !hardware.empty();
  LayoutRequest each{hardware, links()};
  each.alike_experts_once = false;
  const LayoutPricer once(whole, {hardware, links()}), apart(whole, each);
  for (const ParallelLayout& l : layouts()) {
    if (l.offload_optimizer && !gpu) continue;  // no host link
    for (const std::string& plan : plans) {
      const LayoutEstimate a = once.estimate(l, plan), b = apart.estimate(l, plan);
      const std::string where = l.label() + " " + plan + " on " + (gpu ? hardware : "the CPU");
      ASSERT_EQ(a.stages.size(), b.stages.size()) << where;
      for (size_t s = 0; s < a.stages.size(); ++s) {
        const StageEstimate &x = a.stages[s], &y = b.stages[s];
        // Byte counts summed in another order: equal but for the doubles' rounding.
        EXPECT_TRUE(same(x.peak_bytes, y.peak_bytes))
            << where << ", stage " << s << ": " << x.peak_bytes << " against " << y.peak_bytes;
        EXPECT_EQ(x.peak_at, y.peak_at) << where << ", stage " << s;
        EXPECT_TRUE(same(x.activation_bytes, y.activation_bytes)) << where << ", stage " << s;
        EXPECT_TRUE(same(x.static_bytes, y.static_bytes)) << where << ", stage " << s;
        // Where each expert was timed on its own (a CPU), ZeRO-3's gathers overlap their mean.
        if (!gpu && l.zero_stage == 3) continue;
        for (const auto& [u, v] : {std::pair{x.micro_batch_seconds, y.micro_batch_seconds},
                                   {x.expert_comm_seconds, y.expert_comm_seconds},
                                   {x.tensor_comm_seconds, y.tensor_comm_seconds},
                                   {x.data_comm_seconds, y.data_comm_seconds}}) {
          EXPECT_TRUE(same(u, v)) << where << ", stage " << s << ": " << u << " against " << v;
        }
      }
      if (gpu || l.zero_stage != 3) EXPECT_TRUE(same(a.iteration_seconds, b.iteration_seconds)) << where;
    }
  }
}

TEST(AlikeExperts, AllButTheLastOfARunStandAsTheFirst) {
  const LayerModel whole = eight_experts();
  const LayerModel collapsed = collapse_alike_experts(whole);
  ASSERT_LT(collapsed.layers.size(), whole.layers.size());
  std::set<std::string> paths;
  for (const LayerFit& l : whole.layers) paths.insert(l.path);
  double parameters[2] = {0, 0}, flops[2] = {0, 0}, saved[2] = {0, 0};
  int standing = 0;
  for (int m = 0; m < 2; ++m) {
    for (const LayerFit& l : (m == 0 ? whole : collapsed).layers) {
      EXPECT_TRUE(paths.count(l.path)) << l.path;
      parameters[m] += static_cast<double>(l.parameter_bytes);
      flops[m] += l.forward_flops_per_sample;
      for (const auto& t : l.saved) saved[m] += t.storage_bytes_per_sample;
      if (m == 1 && l.repeats > 1) {
        ++standing;
        // The first expert whose gap is like the others' stands for all but the run's last.
        EXPECT_NE(l.path.find(".moe.experts."), std::string::npos) << l.path;
        EXPECT_GE(l.repeats, 2) << l.path;
      }
    }
  }
  EXPECT_GT(standing, 0);
  EXPECT_DOUBLE_EQ(parameters[1], parameters[0]);
  EXPECT_DOUBLE_EQ(flops[1], flops[0]);
  EXPECT_DOUBLE_EQ(saved[1], saved[0]);
  // The last expert of each block (the router's probabilities are held up to it) stays.
  for (const char* last : {"blocks.0.moe.experts.7.fc1", "blocks.1.moe.experts.7.fc2"}) {
    EXPECT_TRUE(std::any_of(collapsed.layers.begin(), collapsed.layers.end(), [&](const LayerFit& l) {
      return l.path == last && l.repeats == 1;
    })) << last;
  }
  // A network without experts is as it was.
  const LayerModel dense = profiler::quick_fit("llama-tiny");
  EXPECT_EQ(collapse_alike_experts(dense).layers.size(), dense.layers.size());
}

TEST(AlikeExperts, PricedOnceAsEachOnItsOwnOnTheCpu) {
  expect_priced_alike(eight_experts(), "", {"keep", "recompute-all", "quantize-4", "quantize-2+invert"});
}

TEST(AlikeExperts, PricedOnceAsEachOnItsOwnOnAGpu) {
  expect_priced_alike(eight_experts(), "A100-80GB", {"keep", "recompute-all", "quantize-4", "swap", "quantize-4+swap"});
}

TEST(AlikeExperts, TheBusiestExpertStaysOnItsOwn) {
  // 15 of each sample's 64 routings to the last expert, 7 to each other one.
  const LayerModel whole = eight_experts(15.0 / 64);
  const LayerModel collapsed = collapse_alike_experts(whole);
  ASSERT_LT(collapsed.layers.size(), whole.layers.size());
  // The busiest and the last of the alike run before it stay as they are.
  for (const char* kept : {"blocks.0.moe.experts.6.fc1", "blocks.0.moe.experts.7.fc1"}) {
    EXPECT_TRUE(std::any_of(collapsed.layers.begin(), collapsed.layers.end(), [&](const LayerFit& l) {
      return l.path == kept && l.repeats == 1;
    })) << kept;
  }
  expect_priced_alike(whole, "H100-SXM-80GB", {"keep", "quantize-4", "swap"});
}

// `limits --network` collapses a large network's fractions before it makes
// them whole: the model is the whole one collapsed.
TEST(AlikeExperts, CollapsedBeforeTheShapeIsMadeWholeAsAfter) {
  const NetworkConfig whole = eight_experts_config();
  constexpr int parts = 4;
  std::vector<ModelAtFraction> fractions;
  for (int k = 1; k <= 3; ++k) {
    fractions.push_back({k, profiler::quick_fit(at_shape_fraction(whole, k, parts, ShapeCut::tokens_and_widths))});
  }
  const LayerModel after = collapse_alike_experts(at_full_shape(fractions, parts, ShapeCut::tokens_and_widths, "test"));
  collapse_alike_experts({&fractions[0].model, &fractions[1].model, &fractions[2].model});
  const LayerModel before = at_full_shape(fractions, parts, ShapeCut::tokens_and_widths, "test");
  ASSERT_LT(after.layers.size(), fractions[0].model.layers.size() * 2);
  ASSERT_EQ(before.layers.size(), after.layers.size());
  const auto near = [](double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)) + 1; };
  for (size_t j = 0; j < after.layers.size(); ++j) {
    const LayerFit &a = after.layers[j], &b = before.layers[j];
    ASSERT_EQ(a.path, b.path);
    EXPECT_EQ(a.repeats, b.repeats) << a.path;
    EXPECT_NEAR(a.parameter_bytes, b.parameter_bytes, a.repeats) << a.path;  // each copy's rounded, or their sum
    EXPECT_TRUE(near(a.forward_flops_per_sample, b.forward_flops_per_sample)) << a.path;
    for (const auto& [x, y] : {std::pair{a.forward_start, b.forward_start},
                               {a.forward_peak, b.forward_peak},
                               {a.backward_start, b.backward_start},
                               {a.backward_peak, b.backward_peak}}) {
      EXPECT_TRUE(near(x.per_sample, y.per_sample) && near(x.fixed, y.fixed)) << a.path;
    }
    for (const auto& [x, y] : {std::pair{a.forward_seconds, b.forward_seconds}, {a.backward_seconds, b.backward_seconds}}) {
      EXPECT_NEAR(x.per_sample, y.per_sample, 1e-9 * y.per_sample + 1e-15) << a.path;
      EXPECT_NEAR(x.fixed, y.fixed, 1e-9 * std::abs(y.fixed) + 1e-15) << a.path;
      EXPECT_NEAR(x.floor, y.floor, 1e-9 * y.floor + 1e-15) << a.path;
    }
    ASSERT_EQ(a.saved.size(), b.saved.size()) << a.path;
    for (size_t k = 0; k < a.saved.size(); ++k) {
      EXPECT_NEAR(a.saved[k].storage_bytes_per_sample, b.saved[k].storage_bytes_per_sample, a.repeats) << a.path;
    }
  }
  for (size_t s = 0; s < after.segments.size(); ++s) {
    EXPECT_NEAR(after.segments[s].recompute_seconds.per_sample, before.segments[s].recompute_seconds.per_sample,
                1e-9 * before.segments[s].recompute_seconds.per_sample);
  }
  EXPECT_NEAR(after.rest_seconds.per_sample, before.rest_seconds.per_sample, 1e-9 * std::abs(before.rest_seconds.per_sample));
}

}  // namespace
}  // namespace papaya::model
