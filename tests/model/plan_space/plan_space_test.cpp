// The decomposed view a planner searches agrees with predict().
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "model/error.h"
#include "model/fit/fit_profile.h"
#include "model/parallel/data_parallel.h"
#include "model/plan_space/predict.h"
#include "tests/support/synthetic_profile.h"

namespace papaya::model {
namespace {

LayerModel gpt_model(int blocks, bool gpu) {
  testing::ProfileSpec spec = testing::gpt_like(blocks);
  if (gpu) {
    spec.device = "cuda:0";
    spec.device_name = "test gpu";
    spec.link_bytes_per_s = 2e10;
  }
  return fit_profile(testing::make_profile(spec), "synthetic").model;
}

// The option index of every storage and segment that reproduces `plan`.
std::pair<std::vector<int>, std::vector<int>> choices_for(const PlanSpace& space, const Plan& plan) {
  const Assignment wanted = space.assignment(plan);
  std::vector<int> storage, segment;
  for (size_t g = 0; g < space.storages().size(); ++g) {
    const auto& st = space.storages()[g];
    std::vector<TensorStrategy> per_slot;
    for (int i : st.slots) per_slot.push_back(wanted.slots[static_cast<size_t>(i)]);
    const auto options = space.options(static_cast<int>(g));
    int found = -1;
    for (size_t o = 0; o < options.size(); ++o) {
      if (options[o].per_slot == per_slot) found = static_cast<int>(o);
    }
    EXPECT_GE(found, 0) << plan.name << ": no option of " << st.key << " stores it as the plan does";
    storage.push_back(std::max(found, 0));
  }
  for (size_t s = 0; s < space.segments().size(); ++s) {
    int found = -1;
    if (wanted.segments[s].recompute) {
      const auto options = space.segment_cost(static_cast<int>(s)).input_options;
      for (size_t o = 0; o < options.size(); ++o) {
        if (options[o].strategy == wanted.segments[s].input) found = static_cast<int>(o);
      }
      EXPECT_GE(found, 0) << plan.name << ": segment input " << wanted.segments[s].input.name();
    }
    segment.push_back(found);
  }
  return {storage, segment};
}

TEST(PlanSpace, OptionsReproduceEveryGlobalPlan) {
  const LayerModel m = gpt_model(3, true);
  const Target target = profiled_target(m);
  const PlanSpace space(m, target, 24);
  for (const auto& name : plan_names(m, target)) {
    const Plan plan = expand_plan_name(name, m.layout());
    const auto [storage, segment] = choices_for(space, plan);
    const Estimate by_options = space.evaluate(space.assignment(storage, segment));
    const Estimate by_plan = predict(m, target, plan, 24);
    EXPECT_DOUBLE_EQ(by_options.peak_bytes, by_plan.peak_bytes) << name;
    EXPECT_DOUBLE_EQ(by_options.seconds, by_plan.seconds) << name;
    EXPECT_DOUBLE_EQ(by_options.host_bytes, by_plan.host_bytes) << name;
  }
}

TEST(PlanSpace, OptionBytesAndCodecSecondsAddUp) {
  // The last layer saves nothing: at its backward every storage is held in
  // its stored form and nothing is dequantized, so the bytes there are keep's
  // plus the sum over storages of (option - keep) device bytes. Codec and
  // recompute time (quantize-N recomputes the LM head's log-probabilities)
  // add up exactly as long as no GELU is inverted (it would dequantize fc2's
  // copy too).
  const LayerModel m = gpt_model(2, false);
  const Target target = profiled_target(m);
  const PlanSpace space(m, target, 16);
  const size_t steady = m.layers.size();  // the first backward point: the last layer's
  ASSERT_EQ(space.points()[steady].phase, Phase::backward);
  ASSERT_TRUE(m.layers.back().saved.empty());
  const std::vector<int> no_segments(space.segments().size(), -1);
  const std::vector<int> keep(space.storages().size(), 0);
  const auto keep_assignment = space.assignment(keep, no_segments);
  const double keep_bytes = space.timeline(keep_assignment)[steady];
  const double keep_seconds = space.evaluate(keep_assignment).seconds;
  for (const char* name : {"quantize-8", "quantize-4", "quantize-2"}) {
    std::vector<int> chosen;
    double bytes = keep_bytes, seconds = keep_seconds, raw = 0, packed = 0;
    for (size_t g = 0; g < space.storages().size(); ++g) {
      const auto options = space.options(static_cast<int>(g));
      int pick = 0;
      for (size_t o = 0; o < options.size(); ++o) {
        if (options[o].strategy.name() == name) pick = static_cast<int>(o);
      }
      chosen.push_back(pick);
      bytes += options[static_cast<size_t>(pick)].device_bytes - options[0].device_bytes;
      seconds += options[static_cast<size_t>(pick)].codec_seconds + options[static_cast<size_t>(pick)].recompute_seconds;
      (pick ? packed : raw) += options[static_cast<size_t>(pick)].device_bytes;
    }
    const auto a = space.assignment(chosen, no_segments);
    EXPECT_NEAR(space.timeline(a)[steady], bytes, 1e-6) << name;
    EXPECT_NEAR(space.evaluate(a).seconds, seconds, 1e-12) << name;
    // The timeline taken apart holds each storage there as its option stores it.
    double raw_band = 0, packed_band = 0;
    for (const HeldBand& b : space.timeline_parts(a).bands) {
      if (b.name == "saved raw") {
        raw_band = b.bytes[steady];
      } else if (b.name.rfind("saved ", 0) == 0) {
        packed_band += b.bytes[steady];  // its masks' 1-bit form too
      }
    }
    EXPECT_DOUBLE_EQ(packed_band, packed) << name;
    EXPECT_DOUBLE_EQ(raw_band, raw) << name;
    EXPECT_LT(bytes, keep_bytes) << name;
  }
}

TEST(PlanSpace, SegmentsFreeWhatTheySay) {
  // Recomputing a block frees its storages between forward and backward and
  // keeps its input (raw: the first block's ln1 input, which it frees too);
  // its backward gets its recompute time.
  const LayerModel m = gpt_model(2, false);
  const PlanSpace space(m, profiled_target(m), 16);
  const size_t steady = m.layers.size();
  const std::vector<int> keep(space.storages().size(), 0);
  const auto base = space.assignment(keep, std::vector<int>(space.segments().size(), -1));
  for (size_t s = 0; s < space.segments().size(); ++s) {
    std::vector<int> segments(space.segments().size(), -1);
    segments[s] = 0;
    const auto a = space.assignment(keep, segments);
    const auto view = space.segment_cost(static_cast<int>(s));
    EXPECT_GT(view.freed_bytes, 0);
    EXPECT_GE(view.rematerialized_bytes, view.freed_bytes);
    EXPECT_NEAR(space.timeline(a)[steady] - space.timeline(base)[steady], view.input_options[0].device_bytes - view.freed_bytes,
                1e-6);
    EXPECT_NEAR(space.evaluate(a).seconds - space.evaluate(base).seconds, view.recompute_seconds, 1e-12);
  }
}

TEST(PlanSpace, OptionsAreTheApplicableStrategies) {
  const LayerModel m = gpt_model(1, false);  // CPU: no swap
  const PlanSpace space(m, profiled_target(m), 8);
  for (size_t g = 0; g < space.storages().size(); ++g) {
    const auto& st = space.storages()[g];
    const auto options = space.options(static_cast<int>(g));
    ASSERT_FALSE(options.empty());
    EXPECT_TRUE(options[0].strategy.is_keep());
    EXPECT_DOUBLE_EQ(options[0].device_bytes, space.storage_bytes(static_cast<int>(g)));
    for (const auto& o : options) EXPECT_FALSE(o.strategy.swap) << st.key;
    if (st.slots.empty()) continue;
    const auto& slot = space.slots()[static_cast<size_t>(st.slots[0])];
    if (slot.kind == SlotKind::stats || slot.kind == SlotKind::index) {
      EXPECT_EQ(options.size(), 1u) << st.key;
    }
    if (st.key == "blocks.0.mlp.act:input") {
      bool invert = false;
      for (const auto& o : options) invert = invert || o.strategy.form == Form::inverted;
      EXPECT_TRUE(invert);
    }
    if (st.key == "lm_head:logprobs") {
      EXPECT_EQ(options.size(), 2u);  // keep, recompute
    }
  }
  const auto& shared = space.storages()[static_cast<size_t>(space.slots()[0].storage)];
  EXPECT_EQ(shared.key, "tok_emb:ids");
}

TEST(PlanSpace, PlanOfAnAssignmentRoundTrips) {
  const LayerModel m = gpt_model(2, true);
  const Target target = profiled_target(m);
  const PlanSpace space(m, target, 8);
  const Plan original = expand_plan_name("recompute-all+quantize-4+swap", m.layout());
  const Plan written = space.plan(space.assignment(original), "mine");
  EXPECT_EQ(written.batch, 8);
  const Plan read = parse_plan(plan_to_json(written, m.layout()), m.layout(), m.network, "mine.json");
  EXPECT_DOUBLE_EQ(predict(m, target, read, 8).peak_bytes, predict(m, target, original, 8).peak_bytes);
  EXPECT_DOUBLE_EQ(predict(m, target, read, 8).seconds, predict(m, target, original, 8).seconds);
}

TEST(PlanSpace, AnotherBatchIsTheSameAsANewSpace) {
  const LayerModel m = gpt_model(2, true);
  const Target target = profiled_target(m);
  const PlanSpace small(m, target, 4);
  const Plan plan = expand_plan_name("recompute-all+quantize-4+invert+swap", m.layout());
  const Assignment a = small.assignment(plan);
  int fc1 = 0;
  while (small.storages()[static_cast<size_t>(fc1)].key != "blocks.1.mlp.fc1:input") ++fc1;
  for (int64_t b : {1, 7, 300}) {
    const PlanSpace fresh(m, target, b);
    EXPECT_DOUBLE_EQ(small.at_batch(b).evaluate(a).peak_bytes, fresh.evaluate(a).peak_bytes);
    EXPECT_DOUBLE_EQ(small.at_batch(b).evaluate(a).seconds, fresh.evaluate(a).seconds);
    const auto options = small.at_batch(b).options(fc1);
    ASSERT_GT(options.size(), 2u);
    EXPECT_DOUBLE_EQ(options[1].device_bytes, fresh.options(fc1)[1].device_bytes);
    EXPECT_DOUBLE_EQ(options[2].codec_seconds, fresh.options(fc1)[2].codec_seconds);
  }
  EXPECT_THROW(small.at_batch(0), InputError);
}

// Quantizing costs each call its fixed seconds besides its bytes' share:
// one pack in forward, one unpack per use in backward.
TEST(PlanSpace, CodecSecondsAreAFixedCostPerCallPlusTheBytes) {
  LayerModel m = gpt_model(2, true);
  for (auto& c : m.codecs) {
    c.pack_seconds_per_call = 1e-4;
    c.unpack_seconds_per_call = 3e-4;
  }
  const PlanSpace space(m, profiled_target(m), 8);
  int fc2 = 0;
  while (space.storages()[static_cast<size_t>(fc2)].key != "blocks.1.mlp.fc2:input") ++fc2;
  ASSERT_EQ(space.storages()[static_cast<size_t>(fc2)].slots.size(), 1u);
  const double raw = space.storage_bytes(fc2);
  const CodecMeasurement& c4 = space.target().codec(4);
  for (const auto& option : space.options(fc2)) {
    if (option.strategy.name() != "quantize-4") continue;
    EXPECT_DOUBLE_EQ(option.codec_seconds, 1e-4 + raw / c4.pack_bytes_per_s + 3e-4 + raw / c4.unpack_bytes_per_s);
    return;
  }
  FAIL() << "no quantize-4 option";
}

TEST(PlanSpace, AnInvertedGeluPaysItsBackwardFromTheOutputBeyondKeeps) {
  const LayerModel plain = gpt_model(2, true);
  LayerModel m = plain;
  m.inverts = {{LayerKind::gelu, 1e8, 4e8}};  // from the output at a quarter of the native backward's rate
  const auto invert_option = [](const LayerModel& model) {
    const PlanSpace space(model, profiled_target(model), 8);
    int act = 0;
    while (space.storages()[static_cast<size_t>(act)].key != "blocks.1.mlp.act:input") ++act;
    for (const auto& option : space.options(act)) {
      if (option.strategy.form == Form::inverted) return std::make_pair(option.codec_seconds, space.storage_bytes(act));
    }
    ADD_FAILURE() << "no invert option";
    return std::make_pair(0.0, 0.0);
  };
  const auto [with, raw] = invert_option(m);
  EXPECT_DOUBLE_EQ(with - invert_option(plain).first, raw / 1e8 - raw / 4e8);
  // The whole step: two GELUs pay it.
  const auto seconds = [](const LayerModel& model) {
    return predict(model, profiled_target(model), expand_plan_name("invert", model.layout()), 8).seconds;
  };
  EXPECT_NEAR(seconds(m) - seconds(plain), 2 * (raw / 1e8 - raw / 4e8), 1e-12);
}

// The timeline of `changes` on top of keep's.
std::vector<double> with_changes(std::vector<double> bytes, const std::vector<PlanSpace::Change>& changes) {
  for (const auto& c : changes) {
    for (int p = c.from; p <= c.to; ++p) bytes[static_cast<size_t>(p)] += c.bytes;
  }
  return bytes;
}

TEST(PlanSpace, ChangesOfOneDecisionAreItsTimeline) {
  for (const bool gpu : {false, true}) {
    const LayerModel m = gpt_model(2, gpu);
    const PlanSpace space(m, profiled_target(m), 12);
    const std::vector<int> no_segments(space.segments().size(), -1), keep(space.storages().size(), 0);
    const std::vector<double> base = space.timeline(space.assignment(keep, no_segments));
    for (size_t g = 0; g < space.storages().size(); ++g) {
      for (size_t o = 0; o < space.options(static_cast<int>(g)).size(); ++o) {
        std::vector<int> one = keep;
        one[g] = static_cast<int>(o);
        const auto expected = space.timeline(space.assignment(one, no_segments));
        const auto got = with_changes(base, space.changes({{static_cast<int>(g), static_cast<int>(o)}}));
        for (size_t p = 0; p < got.size(); ++p) {
          ASSERT_NEAR(got[p], expected[p], 1e-6) << space.storages()[g].key << " option " << o << " at point " << p;
        }
      }
    }
    for (size_t s = 0; s < space.segments().size(); ++s) {
      for (size_t k = 0; k < space.segment_cost(static_cast<int>(s)).input_options.size(); ++k) {
        std::vector<int> segments = no_segments;
        segments[s] = static_cast<int>(k);
        const auto expected = space.timeline(space.assignment(keep, segments));
        const auto got = with_changes(base, space.segment_changes(static_cast<int>(s), static_cast<int>(k)));
        for (size_t p = 0; p < got.size(); ++p)
          ASSERT_NEAR(got[p], expected[p], 1e-6) << space.segments()[s].path << " input " << k;
      }
    }
  }
}

TEST(PlanSpace, ChangesOfDecisionsOnDifferentStoragesAddUp) {
  // quantize-4 on every storage and a recomputed second block: each decision
  // concerns its own storages (no GELU is inverted).
  const LayerModel m = gpt_model(2, true);
  const PlanSpace space(m, profiled_target(m), 12);
  std::vector<int> storage(space.storages().size(), 0), segments(space.segments().size(), -1);
  segments[1] = 0;
  std::vector<PlanSpace::Change> all = space.segment_changes(1, 0);
  for (size_t g = 0; g < space.storages().size(); ++g) {
    const auto options = space.options(static_cast<int>(g));
    const bool inside = std::any_of(space.storages()[g].slots.begin(), space.storages()[g].slots.end(), [&](int i) {
      return m.layers[static_cast<size_t>(space.slots()[static_cast<size_t>(i)].layer)].segment == "blocks.1";
    });
    for (size_t o = 0; o < options.size() && !inside; ++o) {
      if (options[o].strategy.name() != "quantize-4") continue;
      storage[g] = static_cast<int>(o);
      const auto c = space.changes({{static_cast<int>(g), static_cast<int>(o)}});
      all.insert(all.end(), c.begin(), c.end());
    }
  }
  const std::vector<int> keep(space.storages().size(), 0);
  const auto base = space.timeline(space.assignment(keep, std::vector<int>(space.segments().size(), -1)));
  const auto expected = space.timeline(space.assignment(storage, segments));
  const auto got = with_changes(base, all);
  for (size_t p = 0; p < got.size(); ++p) EXPECT_NEAR(got[p], expected[p], 1e-6) << "point " << p;
}

TEST(PlanSpace, ChangesOfAnInvertedGeluWithItsConsumerAreTheirTimeline) {
  // Inverted, the GELU keeps its output as fc2 keeps its input: quantized
  // here, so the two decisions meet and are given together.
  const LayerModel m = gpt_model(1, true);
  const PlanSpace space(m, profiled_target(m), 12);
  const auto index = [&](const std::string& key) {
    for (size_t g = 0; g < space.storages().size(); ++g) {
      if (space.storages()[g].key == key) return static_cast<int>(g);
    }
    return -1;
  };
  const auto option = [&](int g, const std::string& name) {
    const auto options = space.options(g);
    for (size_t o = 0; o < options.size(); ++o) {
      if (options[o].strategy.name() == name) return static_cast<int>(o);
    }
    return -1;
  };
  const int gelu = index("blocks.0.mlp.act:input"), fc2 = index("blocks.0.mlp.fc2:input");
  ASSERT_GE(gelu, 0);
  ASSERT_GE(fc2, 0);
  const std::vector<int> no_segments(space.segments().size(), -1), keep(space.storages().size(), 0);
  const auto base = space.timeline(space.assignment(keep, no_segments));
  for (const char* consumer : {"quantize-4", "quantize-2+swap", "swap"}) {
    std::vector<int> both = keep;
    both[static_cast<size_t>(gelu)] = option(gelu, "invert");
    both[static_cast<size_t>(fc2)] = option(fc2, consumer);
    ASSERT_GE(both[static_cast<size_t>(fc2)], 0) << consumer;
    const auto expected = space.timeline(space.assignment(both, no_segments));
    const auto got =
        with_changes(base, space.changes({{gelu, both[static_cast<size_t>(gelu)]}, {fc2, both[static_cast<size_t>(fc2)]}}));
    for (size_t p = 0; p < got.size(); ++p) ASSERT_NEAR(got[p], expected[p], 1e-6) << consumer << " at point " << p;
  }
}

// 500 layers build and evaluate at other batches; how fast is
// bench/planner_speed.sh's to say, not a test's.
// The bands of timeline_parts() add up to timeline() at every point, each
// saved band to its tensors, under every plan and as a ZeRO-3 rank.
TEST(PlanSpace, TheTimelineTakenApartAddsUpToIt) {
  const LayerModel m = gpt_model(3, true);
  Target target = profiled_target(m);
  for (const int ranks : {1, 4}) {
    if (ranks > 1) set_data_parallel(target, {ranks, 3, "test link", {1e-5, 1e10, {}}, default_bucket_bytes});
    const PlanSpace space(m, target, 16);
    for (const auto& name : plan_names(m, target)) {
      const Assignment a = space.assignment(expand_plan_name(name, m.layout()));
      const std::vector<double> total = space.timeline(a);
      const TimelineParts parts = space.timeline_parts(a);
      std::map<std::string, std::vector<double>> tensors;
      for (const HeldTensor& t : parts.tensors) {
        auto& bytes = tensors.try_emplace("saved " + t.form, total.size(), 0.0).first->second;
        for (int p = t.from; p <= t.to; ++p) bytes[static_cast<size_t>(p)] += t.bytes;
      }
      for (size_t p = 0; p < total.size(); ++p) {
        double sum = 0;
        for (const HeldBand& b : parts.bands) {
          sum += b.bytes[p];
          if (tensors.count(b.name)) EXPECT_NEAR(b.bytes[p], tensors[b.name][p], 1e-6 * total[p]) << name << " " << b.name;
        }
        EXPECT_NEAR(sum, total[p], 1e-9 * total[p]) << name << " at point " << p << ", " << ranks << " ranks";
      }
      std::vector<std::string> names;
      for (const HeldBand& b : parts.bands) names.push_back(b.name);
      const bool gathers = std::find(names.begin(), names.end(), "gathered weights") != names.end();
      EXPECT_EQ(gathers, ranks > 1) << name;
      EXPECT_EQ(std::find(names.begin(), names.end(), "exchange buffers") != names.end(), ranks > 1) << name;
    }
  }
}

// One pass gives what evaluate() and saved_bytes() give apart; a
// data-parallel rank's passes (Estimate::passes_seconds) are the network's
// trained alone, which its step takes but for the optimizer, and the
// exchange and gathers are what the rank's step adds beyond them.
TEST(PlanSpace, OnePassGivesTheEstimateTheSavedBytesAndARanksPasses) {
  const LayerModel m = gpt_model(3, true);
  const Target alone = profiled_target(m);
  const PlanSpace by_itself(m, alone, 16);
  for (const int zero : {0, 1, 3}) {
    Target rank = alone;
    set_data_parallel(rank, {4, zero, "test link", {1e-5, 1e10, {}}, default_bucket_bytes});
    const PlanSpace space(m, rank, 16);
    for (const auto& name : plan_names(m, alone)) {
      const Assignment a = space.assignment(expand_plan_name(name, m.layout()));
      const size_t point = space.points().size() / 2;
      const auto [estimate, saved] = space.evaluate_with_saved_bytes(a, point);
      const Estimate apart = space.evaluate(a);
      EXPECT_EQ(estimate.peak_bytes, apart.peak_bytes) << name;
      EXPECT_EQ(estimate.seconds, apart.seconds) << name;
      EXPECT_EQ(estimate.passes_seconds, apart.passes_seconds) << name;
      EXPECT_EQ(saved, space.saved_bytes(a, point)) << name;
      const Estimate whole = by_itself.evaluate(a);
      EXPECT_NEAR(whole.passes_seconds, whole.seconds - alone.optimizer_seconds.at(16), 1e-12 * whole.seconds) << name;
      EXPECT_EQ(estimate.passes_seconds, whole.passes_seconds) << name << ", ZeRO-" << zero;
      const double optimizer = zero >= 1 ? alone.optimizer_seconds.at(16) / 4 : alone.optimizer_seconds.at(16);
      EXPECT_GT(estimate.seconds, estimate.passes_seconds + optimizer) << name << ", ZeRO-" << zero;
    }
  }
}

TEST(PlanSpace, FiveHundredLayersEvaluateAtEveryBatch) {
  const LayerModel m = gpt_model(46, true);  // 46 blocks of 11 layers + 4
  ASSERT_GE(m.layers.size(), 500u);
  const Target target = profiled_target(m);
  const PlanSpace space(m, target, 64);
  const Assignment a = space.assignment(expand_plan_name("quantize-4+invert+swap", m.layout()));
  double previous = 0;
  for (int i = 0; i < 100; ++i) {
    const double peak = space.at_batch(64 + i).evaluate(a).peak_bytes;
    EXPECT_GT(peak, previous) << "batch " << 64 + i;
    previous = peak;
  }
  for (size_t g = 0; g < space.storages().size(); ++g) EXPECT_FALSE(space.options(static_cast<int>(g)).empty()) << g;
}

}  // namespace
}  // namespace papaya::model
