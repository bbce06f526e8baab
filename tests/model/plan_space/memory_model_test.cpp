// Peak memory under plans on hand-built profiles: every expected figure is
// worked out by hand in the comments from the keep figures and the rules of
// plan_space.h.
#include <gtest/gtest.h>

#include "model/error.h"
#include "model/fit/fit_profile.h"
#include "model/plan.h"
#include "model/plan_space/predict.h"
#include "tests/support/synthetic_profile.h"

namespace papaya::model {
namespace {

using testing::LayerSpec;
using testing::make_profile;
using testing::ProfileSpec;
using testing::saved;

constexpr double S = 10000;  // static bytes
constexpr int64_t B = 256;   // the batch predicted at

LinearCurve per_sample(double bytes) { return {bytes, S}; }

// fc1 -> gelu -> fc2 inside segment "blk", then a head outside it. Per sample:
// fc1 saves x0 (25 fp32 = 100 B), the gelu its input h (400 B), fc2 the gelu's
// output g (400 B), the head its input (100 B). Keep figures per sample:
//            forward start/peak   backward start/peak
//   fc1          100 /  500          500 /  600
//   act          500 /  900          900 / 1300
//   fc2          900 / 1000         1100 / 1500
//   head        1000 / 1140         1100 / 1900   <- keep peak: S + 1900b
ProfileSpec chain(bool fc2_saves_gelu_output = true) {
  ProfileSpec spec;
  spec.static_bytes = S;
  const auto layer = [](std::string path, std::string kind, std::string segment, std::vector<SavedTensorProfile> saved_,
                        double fs, double fp, double bs, double bp) {
    LayerSpec l;
    l.path = std::move(path);
    l.kind = std::move(kind);
    l.segment = std::move(segment);
    l.saved = std::move(saved_);
    l.forward_start = per_sample(fs);
    l.forward_peak = per_sample(fp);
    l.backward_start = per_sample(bs);
    l.backward_peak = per_sample(bp);
    l.forward_s = {0, 1e-4, 1e-4};
    l.backward_s = {0, 2e-4, 1e-4};
    return l;
  };
  spec.layers.push_back(
      layer("fc1", "linear", "blk", {saved("input", SlotKind::activation, 25, 4, "fc1:input")}, 100, 500, 500, 600));
  spec.layers.push_back(
      layer("act", "gelu", "blk", {saved("input", SlotKind::activation, 100, 4, "act:input")}, 500, 900, 900, 1300));
  spec.layers.back().output_bytes_per_sample = 400;
  if (fc2_saves_gelu_output) {
    spec.layers.back().output_saved_by = {"fc2:input"};
    spec.layers.push_back(
        layer("fc2", "linear", "blk", {saved("input", SlotKind::activation, 100, 4, "fc2:input")}, 900, 1000, 1100, 1500));
  } else {
    spec.layers.push_back(layer("fc2", "position", "blk", {}, 900, 1000, 1100, 1500));
  }
  spec.layers.push_back(
      layer("head", "linear", "", {saved("input", SlotKind::activation, 25, 4, "head:input")}, 1000, 1140, 1100, 1900));
  spec.segments.push_back({"blk", saved("input", SlotKind::activation, 25, 4, "fc1:input"), {0, 1e-4, 1e-4}});
  return spec;
}

LayerModel fitted(const ProfileSpec& spec) { return fit_profile(make_profile(spec), "synthetic").model; }

Estimate at(const LayerModel& m, const std::string& plan, int64_t batch = B) {
  return predict(m, profiled_target(m), load_plan(plan, m.layout(), m.network), batch);
}

// The index of a point of the timeline.
size_t point(const PlanSpace& space, const LayerModel& m, Phase phase, const std::string& layer) {
  for (size_t p = 0; p < space.points().size(); ++p) {
    const TimelinePoint& pt = space.points()[p];
    if (pt.phase == phase && m.layers[static_cast<size_t>(pt.layer)].path == layer) return p;
  }
  ADD_FAILURE() << "no point " << to_string(phase) << " " << layer;
  return 0;
}

TEST(MemoryModel, KeepIsTheProfile) {
  const LayerModel m = fitted(chain());
  const Estimate e = at(m, "keep");
  EXPECT_DOUBLE_EQ(e.peak_bytes, S + 1900 * B);
  EXPECT_EQ(e.peak_at.phase, Phase::backward);
  EXPECT_EQ(m.layers[static_cast<size_t>(e.peak_at.layer)].path, "head");
}

TEST(MemoryModel, Quantize4) {
  // Packed sizes at b = 256 (groups of 128 values: 64 bytes + 4 of min/scale):
  // x0 and the head input, 6400 values: 50 groups = 3400 B; h and g, 25600
  // values: 200 groups = 13600 B.
  // At act's backward (B1): keep S + 1300b; x0 and h are stored packed
  // (-100b + 3400, -400b + 13600) and act dequantizes h (+400b); g is gone
  // already in both. = S + 1200b + 17000. At fc2's backward: S + 1500b - 500b
  // + 3400 + 13600 + 13600 = S + 1000b + 30600; at the head's: S + 1900b -
  // 1000b + 34000 + 100b (dequantized head input) = S + 1000b + 34000.
  const LayerModel m = fitted(chain());
  const Estimate e = at(m, "quantize-4");
  EXPECT_DOUBLE_EQ(e.peak_bytes, S + 1200 * B + 17000);
  EXPECT_EQ(m.layers[static_cast<size_t>(e.peak_at.layer)].path, "act");
  const PlanSpace space(m, profiled_target(m), B);
  const auto timeline = space.timeline(space.assignment(expand_plan_name("quantize-4", m.layout())));
  EXPECT_DOUBLE_EQ(timeline[point(space, m, Phase::backward, "fc2")], S + 1000 * B + 30600);
}

TEST(MemoryModel, TheBatchsDataIsHeldWhateverThePlan) {
  // x0 is the batch itself: quantize-4 adds its copy (3400) and frees no raw
  // bytes of it. At act's backward: S + 1300b - 400b + 13600 (h packed) +
  // 400b (h dequantized) + 3400 = S + 1300b + 17000.
  ProfileSpec spec = chain();
  spec.layers[0].saved[0].held_by_caller = true;
  const LayerModel m = fitted(spec);
  const PlanSpace space(m, profiled_target(m), B);
  const auto timeline = space.timeline(space.assignment(expand_plan_name("quantize-4", m.layout())));
  EXPECT_DOUBLE_EQ(timeline[point(space, m, Phase::backward, "act")], S + 1300 * B + 17000);
  EXPECT_EQ(space.options(space.slots()[0].storage).size(), 1u) << "storing the batch otherwise frees nothing";
}

TEST(MemoryModel, RawStaysWhileTheNetworksCodeHoldsIt) {
  // x0 is used again after fc2 (a residual): under quantize-4 its raw bytes
  // stay through fc2's forward. There: keep S + 1000b; h packed (-400b +
  // 13600), x0 and g copied (+3400 + 13600) = S + 600b + 30600; were x0
  // freed after fc1 as usual, 100b fewer.
  ProfileSpec spec = chain();
  spec.layers[0].saved[0].last_forward_use = "fc2";
  const LayerModel m = fitted(spec);
  const PlanSpace space(m, profiled_target(m), B);
  const auto timeline = space.timeline(space.assignment(expand_plan_name("quantize-4", m.layout())));
  EXPECT_DOUBLE_EQ(timeline[point(space, m, Phase::forward, "fc2")], S + 600 * B + 30600);
  const LayerModel usual = fitted(chain());
  const PlanSpace usual_space(usual, profiled_target(usual), B);
  const auto usual_timeline = usual_space.timeline(usual_space.assignment(expand_plan_name("quantize-4", usual.layout())));
  EXPECT_DOUBLE_EQ(usual_timeline[point(usual_space, usual, Phase::forward, "fc2")], S + 500 * B + 30600);
}

TEST(MemoryModel, CodecScratchCountsWhereItOutgrowsTheLayer) {
  // A codec needing 1 byte of scratch per raw byte, at most 20000: h (102400
  // raw bytes at b = 256) is packed in act's forward, which allocates 400b -
  // 400b (its output) = nothing else: + 20000 there. Dequantizing h in act's
  // backward: act needs 400b beyond its start, more than the 20000. fc1, a
  // linear, packs x0 (25600 raw bytes: 20000 of scratch) before it computes
  // its output, so the scratch is gone by then: its output (400b) is room enough.
  ProfileSpec spec = chain();
  LayerModel m = fitted(spec);
  Target target = profiled_target(m);
  for (auto& c : target.codecs) {
    c.pack_scratch_per_byte = c.unpack_scratch_per_byte = 1;
    c.pack_scratch_max = c.unpack_scratch_max = 20000;
  }
  const PlanSpace space(m, target, B), plain(m, profiled_target(m), B);
  const Assignment q4 = space.assignment(expand_plan_name("quantize-4", m.layout()));
  const auto with = space.timeline(q4), without = plain.timeline(q4);
  EXPECT_DOUBLE_EQ(with[point(space, m, Phase::forward, "act")] - without[point(space, m, Phase::forward, "act")], 20000);
  EXPECT_DOUBLE_EQ(with[point(space, m, Phase::backward, "act")], without[point(space, m, Phase::backward, "act")]);
  EXPECT_DOUBLE_EQ(with[point(space, m, Phase::forward, "fc1")], without[point(space, m, Phase::forward, "fc1")]);
}

TEST(MemoryModel, AnInvertedActivationPacksItsOutputForItsConsumer) {
  // Under quantize-4+invert the GELU packs its input's branch mask and its
  // output g, stored as fc2 stores it (fc2 then finds that copy), in its own
  // forward: with the codec above, 20000 of scratch each there, the GELU
  // itself needing nothing beyond its output.
  const LayerModel m = fitted(chain());
  Target target = profiled_target(m);
  for (auto& c : target.codecs) {
    c.pack_scratch_per_byte = 1;
    c.pack_scratch_max = 20000;
  }
  const PlanSpace space(m, target, B), plain(m, profiled_target(m), B);
  const Assignment a = space.assignment(expand_plan_name("quantize-4+invert", m.layout()));
  const size_t act = point(space, m, Phase::forward, "act");
  EXPECT_DOUBLE_EQ(space.timeline(a)[act] - plain.timeline(a)[act], 2 * 20000);
}

TEST(MemoryModel, InvertWithASavingConsumer) {
  // act keeps a 1-bit mask of h (25600 bits = 3200 B) and uses g as fc2 keeps
  // it (raw): g now lives until act's backward. At the head's backward: S +
  // 1900b - 400b + 3200 (the peak). At act's backward: S + 1300b - 400b + 3200
  // + 25600 (the mask unpacked to bytes) + 400b (g, held longer) = S + 1300b + 28800.
  const LayerModel m = fitted(chain());
  const Estimate e = at(m, "invert");
  EXPECT_DOUBLE_EQ(e.peak_bytes, S + 1500 * B + 3200);
  const PlanSpace space(m, profiled_target(m), B);
  const auto timeline = space.timeline(space.assignment(expand_plan_name("invert", m.layout())));
  EXPECT_DOUBLE_EQ(timeline[point(space, m, Phase::backward, "act")], S + 1300 * B + 28800);
}

TEST(MemoryModel, InvertWithoutASavingConsumerKeepsTheOutputInstead) {
  // Nothing saves the gelu's output, so the gelu keeps it raw (400b, from the
  // next layer's forward to its own backward) besides the mask: at the head's
  // backward S + 1900b - 400b + 400b + 3200 — worse than keep by the mask.
  const LayerModel m = fitted(chain(false));
  EXPECT_DOUBLE_EQ(at(m, "keep").peak_bytes, S + 1900 * B);
  EXPECT_DOUBLE_EQ(at(m, "invert").peak_bytes, S + 1900 * B + 3200);
}

TEST(MemoryModel, SwapKeepsOnlyThePrefetchWindow) {
  // A GPU profile (a host link); every slot swapped raw. At the head's
  // backward the head input and fc2's (prefetched during the head's backward)
  // are on the device, x0 and h not: S + 1900b - 100b - 400b. At fc2's
  // backward: fc2's and act's (prefetched) inputs: S + 1500b - 100b.
  ProfileSpec spec = chain();
  spec.device = "cuda:0";
  spec.device_name = "test gpu";
  spec.link_bytes_per_s = 1e10;
  const LayerModel m = fitted(spec);
  const Estimate e = at(m, "swap");
  EXPECT_DOUBLE_EQ(e.peak_bytes, S + 1400 * B);
  EXPECT_DOUBLE_EQ(e.host_bytes, 1000.0 * B);
  EXPECT_DOUBLE_EQ(at(m, "keep").peak_bytes, S + 1900 * B);
}

TEST(MemoryModel, SwapNeedsAHostLink) {
  const LayerModel m = fitted(chain());
  EXPECT_THROW(at(m, "swap"), InputError);
}

// A pass's scratch that changes its shape with the batch (oneDNN's
// convolution backward on a CPU: a different algorithm up to batch 4 or 8)
// misleads the line through the two largest profiled batches; the probe
// batch, where a block run alone takes the step's scratch, anchors it, and
// so does a layer outside a block, run alone from a gradient it is handed as
// in a step. fc2's backward scratch is 400 B per sample and the head's 800,
// both 3000 B more at batch 2: through the two largest profiled batches,
// fc2's is flat and the head's 400 B a sample.
TEST(MemoryModel, AProbedLayersScratchRunsFromTheLargestBatchToTheProbe) {
  Profile profile = make_profile(chain());
  ASSERT_EQ(profile.batches, (std::vector<int>{1, 2, 4}));
  for (size_t i : {size_t{2}, size_t{3}}) profile.layers[i].measured[1].backward_peak_bytes += 3000;
  const LayerModel without = fit_profile(profile, "synthetic").model;
  profile.probe_batch = 64;
  for (auto& l : profile.layers) l.probe = LayerProbe{1e-3, 2e-3, 0, 0};
  profile.layers[2].probe->backward_headroom_bytes = 400 * 64;  // fc2: the step's scratch at 64
  profile.layers[3].probe->backward_headroom_bytes = 800 * 64;  // the head's
  const LayerModel with = fit_profile(profile, "synthetic").model;
  ASSERT_EQ(with.layers[2].path, "fc2");
  EXPECT_DOUBLE_EQ(with.layers[2].backward_peak.at(B), S + 1500 * B);
  EXPECT_DOUBLE_EQ(without.layers[2].backward_peak.at(B), S + 6000);  // flat from 2 to 4
  EXPECT_DOUBLE_EQ(with.layers[3].backward_peak.at(B), S + 1900 * B);
  EXPECT_DOUBLE_EQ(without.layers[3].backward_peak.at(B), S + 400 * B + 6000);
  EXPECT_DOUBLE_EQ(with.layers[2].backward_start.at(B), S + 1100 * B);  // the start is the profiled batches' line
}

// A kernel chosen by the batch between the profiled batches and the probe's
// (on one thread LibTorch runs a 1x1 convolution on oneDNN from a batch of 16
// on) shows at the probe's rungs, and the peak goes from rung to rung: here
// the head run alone takes 500 B of backward scratch a sample up to batch 8
// and 900 from 16 on. What the step takes beside the head run alone at the
// profiled batches (the loss after it: 800 B a sample in the step against
// 500 alone at batches 2 and 4) is added at every rung and at the probe. A
// line from batch 4 to the probe's would cut across the step, over it at 8
// and under it at 16.
TEST(MemoryModel, AProbedLayersScratchGoesFromRungToRungWithWhatTheStepTakesBeside) {
  Profile profile = make_profile(chain());
  profile.probe_batch = 64;
  for (auto& l : profile.layers) {
    const LayerMeasurement& m = l.measured.back();  // batch 4: the probe's are the same per sample
    l.probe = LayerProbe{1e-3,
                         2e-3,
                         (m.forward_peak_bytes - m.forward_start_bytes) * 16,
                         (m.backward_peak_bytes - m.backward_start_bytes) * 16,
                         {}};
  }
  LayerProbe& head = *profile.layers[3].probe;
  ASSERT_EQ(profile.layers[3].path, "head");
  head.backward_headroom_bytes = 900 * 64;
  head.rungs = {
      {2, 140 * 2, 500 * 2}, {4, 140 * 4, 500 * 4}, {8, 140 * 8, 500 * 8}, {16, 140 * 16, 900 * 16}, {32, 140 * 32, 900 * 32}};
  const LayerModel m = fit_profile(profile, "synthetic").model;
  const LayerFit& fitted_head = m.layers[3];
  EXPECT_DOUBLE_EQ(backward_peak_at(fitted_head, 8), S + 1100 * 8 + 800 * 8);
  EXPECT_DOUBLE_EQ(backward_peak_at(fitted_head, 12), S + 1100 * 12 + (6400 + 19200) / 2);  // halfway from 8 to 16
  EXPECT_DOUBLE_EQ(backward_peak_at(fitted_head, 16), S + 1100 * 16 + 1200 * 16);
  EXPECT_DOUBLE_EQ(backward_peak_at(fitted_head, B), S + 1100 * B + 1200 * B);  // on from the last two
  EXPECT_DOUBLE_EQ(fitted_head.backward_peak.at(B), S + 2300 * B);
  EXPECT_DOUBLE_EQ(forward_peak_at(fitted_head, 16), S + 1140 * 16);
  const Estimate at_16 = at(m, "keep", 16);
  EXPECT_DOUBLE_EQ(at_16.peak_bytes, S + 2300 * 16);
  EXPECT_EQ(m.layers[static_cast<size_t>(at_16.peak_at.layer)].path, "head");
  EXPECT_DOUBLE_EQ(at(m, "keep", 8).peak_bytes, S + 1900 * 8);
}

// Where the optimizer's step peaks above the passes at the profiled batches
// (weights large against activations: a one-block ViT of a few tokens), it
// is a floor of the peak, the same under every plan, not part of the
// passes' calibration, which would fall with the batch (-1900 B a sample
// here: at 256, 1900 x 252 B short).
TEST(MemoryModel, TheOptimizerStepsPeakIsAFloorNotACalibration) {
  ProfileSpec spec = chain();
  spec.optimizer_step_bytes = 20000;  // above the passes' S + 1900 b up to b = 10
  const LayerModel m = fitted(spec);
  EXPECT_DOUBLE_EQ(m.unattributed_peak.at(B), 0);
  EXPECT_DOUBLE_EQ(m.optimizer_peak.at(B), S + 20000);
  const Estimate large = at(m, "keep");
  EXPECT_DOUBLE_EQ(large.peak_bytes, S + 1900 * B);
  EXPECT_FALSE(large.peak_in_optimizer_step);
  for (const std::string plan : {"keep", "quantize-4", "recompute-all"}) {
    const Estimate small = at(m, plan, 2);
    EXPECT_DOUBLE_EQ(small.peak_bytes, S + 20000) << plan;
    EXPECT_TRUE(small.peak_in_optimizer_step) << plan;
    EXPECT_EQ(peak_location(m, small), "optimizer step");
  }
}

TEST(MemoryModel, RecomputeMovesThePeakIntoTheSegmentsBackward) {
  // blk (fc1, act, fc2) keeps only its input x0 (fc1's own input: no extra
  // bytes). Its storages h and g are gone until its backward: the head's
  // backward drops to S + 1900b - 800b; inside blk's backward everything is
  // live again as in keep, so fc2's backward, S + 1500b, is the new peak.
  const LayerModel m = fitted(chain());
  const Estimate e = at(m, "recompute-all");
  EXPECT_DOUBLE_EQ(e.peak_bytes, S + 1500 * B);
  EXPECT_EQ(e.peak_at.phase, Phase::backward);
  EXPECT_EQ(m.layers[static_cast<size_t>(e.peak_at.layer)].path, "fc2");
  EXPECT_EQ(e.peak_at.segment, 0);
  // The recompute points: R0 = backward start of fc2 (S + 1100b) + fc1's
  // forward growth (400b) - h and g not yet recomputed (800b) = S + 700b.
  const PlanSpace space(m, profiled_target(m), B);
  const auto timeline = space.timeline(space.assignment(expand_plan_name("recompute-all", m.layout())));
  EXPECT_DOUBLE_EQ(timeline[point(space, m, Phase::recompute, "fc1")], S + 700 * B);
  EXPECT_DOUBLE_EQ(timeline[point(space, m, Phase::recompute, "act")], S + 1100 * B);
}

TEST(MemoryModel, ARecomputedSegmentHoldsTheGradientOfItsLastLayersOutput) {
  // blk returns fc2's own output (100 B per sample): its gradient, which
  // keep frees after fc2's backward, stays until blk's backward returns, so
  // act's and fc1's backward points hold 100b more than keep's; fc2's and
  // the recompute points do not (keep holds it there too).
  ProfileSpec spec = chain();
  spec.layers[2].output_bytes_per_sample = 100;
  spec.segments[0].returns_last_layer_output = true;
  const LayerModel m = fitted(spec);
  const PlanSpace space(m, profiled_target(m), B);
  const auto timeline = space.timeline(space.assignment(expand_plan_name("recompute-all", m.layout())));
  EXPECT_DOUBLE_EQ(timeline[point(space, m, Phase::backward, "fc2")], S + 1500 * B);
  EXPECT_DOUBLE_EQ(timeline[point(space, m, Phase::backward, "act")], S + 1400 * B);
  EXPECT_DOUBLE_EQ(timeline[point(space, m, Phase::backward, "fc1")], S + 700 * B);
  EXPECT_DOUBLE_EQ(timeline[point(space, m, Phase::recompute, "act")], S + 1100 * B);
  const LayerModel plain = fitted(chain());
  EXPECT_DOUBLE_EQ(space.segment_cost(0).rematerialized_bytes,
                   PlanSpace(plain, profiled_target(plain), B).segment_cost(0).rematerialized_bytes + 100 * B);
  // The planner's per-segment differences give the same timeline.
  std::vector<double> from_changes = space.timeline(space.assignment(expand_plan_name("keep", m.layout())));
  for (const auto& c : space.segment_changes(0, 0)) {
    for (int p = c.from; p <= c.to; ++p) from_changes[static_cast<size_t>(p)] += c.bytes;
  }
  EXPECT_DOUBLE_EQ(from_changes[point(space, m, Phase::backward, "act")], S + 1400 * B);
  EXPECT_DOUBLE_EQ(from_changes[point(space, m, Phase::backward, "fc1")], S + 700 * B);
}

TEST(MemoryModel, MomLayersAndRecomputedSegmentsDoNotHoldParameterCopies) {
  // fc1 and fc2 hold 3000 and 5000 B of bf16 parameter copies from their
  // forward to their backward in keep (in the profile's figures). Points:
  // F fc1..head 0-3, B head 4, R fc1..fc2 5-7, B fc2 8, B act 9, B fc1 10.
  // Quantized, they cast again in backward: fc1's copy goes from point 1 to
  // 9, fc2's from 3 to 7; recomputed, from after their forward to before
  // their recompute: 1-4 and 3-6. The head's (last layer: F and B adjacent)
  // frees nothing; keep and the copies' own points are as profiled.
  ProfileSpec spec = chain();
  spec.layers[0].parameter_copy_bytes = 3000;
  spec.layers[2].parameter_copy_bytes = 5000;
  spec.layers[3].parameter_copy_bytes = 7000;
  const LayerModel m = fitted(spec), plain = fitted(chain());
  const PlanSpace space(m, profiled_target(m), B), plain_space(plain, profiled_target(plain), B);
  const auto freed = [&](const std::string& plan) {
    const auto with = space.timeline(space.assignment(expand_plan_name(plan, m.layout())));
    const auto without = plain_space.timeline(plain_space.assignment(expand_plan_name(plan, plain.layout())));
    std::vector<double> out;
    for (size_t p = 0; p < with.size(); ++p) out.push_back(without[p] - with[p]);
    return out;
  };
  EXPECT_EQ(freed("keep"), std::vector<double>(11, 0));
  EXPECT_EQ(freed("quantize-4"), (std::vector<double>{0, 3000, 3000, 8000, 8000, 8000, 8000, 8000, 3000, 3000, 0}));
  EXPECT_EQ(freed("recompute-all"), (std::vector<double>{0, 3000, 3000, 8000, 8000, 5000, 5000, 0, 0, 0, 0}));
  // The planner's differences: a storage decision frees the copies of the
  // layer whose first slot it stores otherwise; a segment decision, its layers'.
  const auto freed_by = [](const std::vector<PlanSpace::Change>& with, const std::vector<PlanSpace::Change>& without) {
    std::vector<double> out(11, 0);
    for (const auto& c : without) {
      for (int p = c.from; p <= c.to; ++p) out[static_cast<size_t>(p)] += c.bytes;
    }
    for (const auto& c : with) {
      for (int p = c.from; p <= c.to; ++p) out[static_cast<size_t>(p)] -= c.bytes;
    }
    return out;
  };
  ASSERT_EQ(space.slots()[2].key, "fc2:input");
  const int fc2_input = space.slots()[2].storage;
  EXPECT_EQ(freed_by(space.changes({{fc2_input, 1}}), plain_space.changes({{fc2_input, 1}})),
            (std::vector<double>{0, 0, 0, 5000, 5000, 5000, 5000, 5000, 0, 0, 0}));
  EXPECT_EQ(freed_by(space.segment_changes(0, 0), plain_space.segment_changes(0, 0)), freed("recompute-all"));
  EXPECT_DOUBLE_EQ(space.segment_cost(0).freed_bytes, plain_space.segment_cost(0).freed_bytes + 8000);
}

TEST(MemoryModel, TheTimelineTakenApartHoldsTheParameterCopiesAndTheSavedTensors) {
  // The same copies as above, now a band of their own: keep's from each
  // layer's F to its B (fc1 3000 at 0-10, fc2 5000 at 2-8, the head 7000 at
  // 3-4), less what quantize-4 lets go (fc1's at 1-9, fc2's at 3-7). Keep's saved tensors at the head's
  // backward (point 4) are the four storages raw: (100 + 400 + 400 + 100) B a
  // sample; quantize-4 holds none of them raw there.
  ProfileSpec spec = chain();
  spec.layers[0].parameter_copy_bytes = 3000;
  spec.layers[2].parameter_copy_bytes = 5000;
  spec.layers[3].parameter_copy_bytes = 7000;
  const LayerModel m = fitted(spec);
  const PlanSpace space(m, profiled_target(m), B);
  const auto band = [](const TimelineParts& parts, const std::string& name) {
    for (const HeldBand& b : parts.bands) {
      if (b.name == name) return b.bytes;
    }
    return std::vector<double>(11, 0);
  };
  const TimelineParts keep = space.timeline_parts(space.assignment(expand_plan_name("keep", m.layout())));
  const TimelineParts quantized = space.timeline_parts(space.assignment(expand_plan_name("quantize-4", m.layout())));
  EXPECT_EQ(band(keep, "parameter copies"),
            (std::vector<double>{3000, 3000, 8000, 15000, 15000, 8000, 8000, 8000, 8000, 3000, 3000}));
  EXPECT_EQ(band(quantized, "parameter copies"), (std::vector<double>{3000, 0, 5000, 7000, 7000, 0, 0, 0, 5000, 0, 3000}));
  EXPECT_DOUBLE_EQ(band(keep, "saved raw")[4], 1000.0 * B);
  EXPECT_DOUBLE_EQ(band(quantized, "saved raw")[4], 0);
  EXPECT_GT(band(quantized, "saved quantize-4")[4], 0);
  EXPECT_DOUBLE_EQ(band(keep, "weights")[0] + band(keep, "gradients")[0] + band(keep, "AdamW state")[0], S);
  // Recomputed, the rest of keep's figures at R points (5-7) is the
  // recomputation's scratch, and only there.
  const TimelineParts recomputed = space.timeline_parts(space.assignment(expand_plan_name("recompute-all", m.layout())));
  const std::vector<double> scratch = band(recomputed, "recompute scratch"), working = band(recomputed, "working memory");
  for (size_t p = 0; p < 11; ++p) {
    const bool r = p >= 5 && p <= 7;
    EXPECT_EQ(scratch[p] == 0, !r) << p;
    EXPECT_EQ(working[p] == 0, r) << p;
  }
}

TEST(MemoryModel, RecomputeWithAQuantizedInput) {
  // The segment keeps x0 as quantize-4 (3400 B) besides... nothing: fc1's raw
  // x0 is rematerialized during blk's backward from it. At fc2's backward:
  // S + 1500b + 3400. The head input is quantized too.
  const LayerModel m = fitted(chain());
  EXPECT_DOUBLE_EQ(at(m, "recompute-all+quantize-4").peak_bytes, S + 1500 * B + 3400);
}

// One layer saves x; a second saves the same storage; the last saves nothing
// and its backward is where every stored form is held at once.
ProfileSpec sharing(double storage_bytes_per_sample = 400) {
  ProfileSpec spec;
  spec.static_bytes = S;
  for (const char* path : {"a", "b", "c"}) {
    LayerSpec l;
    l.path = path;
    l.kind = "linear";
    const double held = storage_bytes_per_sample;
    l.forward_start = per_sample(std::string(path) == "a" ? 0 : held);
    l.forward_peak = l.backward_start = l.backward_peak = per_sample(held);
    l.forward_s = {0, 1e-4, 1e-4};
    l.backward_s = {0, 1e-4, 1e-4};
    spec.layers.push_back(l);
  }
  spec.layers[0].saved = {saved("x", SlotKind::activation, 100, 4, "a:x")};
  spec.layers[0].saved[0].storage_bytes_per_sample = storage_bytes_per_sample;
  spec.layers[1].saved = {saved("x", SlotKind::activation, 100, 4, "a:x")};
  spec.layers[1].saved[0].storage_bytes_per_sample = storage_bytes_per_sample;
  return spec;
}

double at_last_backward(const LayerModel& m, const nlohmann::json& tensors) {
  const PlanSpace space(m, profiled_target(m), B);
  const nlohmann::json doc = {{"papaya_plan", 1}, {"tensors", tensors}};
  const auto timeline = space.timeline(space.assignment(parse_plan(doc, m.layout(), m.network, "plan.json")));
  return timeline[static_cast<size_t>(m.layers.size())];  // B of the last layer: the first backward point
}

TEST(MemoryModel, OneStorageOneStrategyOneCopy) {
  // 25600 values: quantize-8 = 200 groups of 132 B = 26400, quantize-4 = 13600.
  const LayerModel m = fitted(sharing());
  EXPECT_DOUBLE_EQ(at_last_backward(m, nlohmann::json::object()), S + 400 * B);
  EXPECT_DOUBLE_EQ(at_last_backward(m, {{"a:x", "quantize-8"}, {"b:x", "quantize-8"}}), S + 26400);
  EXPECT_DOUBLE_EQ(at_last_backward(m, {{"a:x", "quantize-8"}, {"b:x", "quantize-4"}}), S + 26400 + 13600);
  // Raw for one slot: the storage stays, and the other's packed copy comes on top.
  EXPECT_DOUBLE_EQ(at_last_backward(m, {{"b:x", "quantize-4"}}), S + 400 * B + 13600);
}

TEST(MemoryModel, AViewKeepsItsWholeStorage) {
  // The slots are views of 100 values of an 800-byte-per-sample storage: keep
  // holds 800b; quantizing both frees all of it for the view's packed copy.
  const LayerModel m = fitted(sharing(800));
  EXPECT_DOUBLE_EQ(at_last_backward(m, nlohmann::json::object()), S + 800 * B);
  EXPECT_DOUBLE_EQ(at_last_backward(m, {{"a:x", "quantize-4"}, {"b:x", "quantize-4"}}), S + 13600);
}

TEST(MemoryModel, GpuAllocationsAreRoundedTo512Bytes) {
  ProfileSpec spec = sharing();
  spec.device = "cuda:0";
  spec.device_name = "test gpu";
  const LayerModel m = fitted(spec);
  EXPECT_DOUBLE_EQ(at_last_backward(m, {{"a:x", "quantize-4"}, {"b:x", "quantize-4"}}), S + 13824);  // 27 * 512
}

// An LM head saving its input (100 B/sample) and log-probabilities (4 tokens
// of 8 fp32 = 128 B/sample) after a linear layer.
//            forward start/peak   backward start/peak
//   fc           100 / 200           200 / 300
//   lm_head      200 / 456           328 / 684   (logits, log-probabilities, their gradients)
TEST(MemoryModel, RecomputedLogProbabilitiesShrinkTheHeadToAChunk) {
  ProfileSpec spec;
  spec.static_bytes = S;
  LayerSpec fc;
  fc.path = "fc";
  fc.kind = "linear";
  fc.saved = {saved("input", SlotKind::activation, 25, 4, "fc:input")};
  fc.forward_start = per_sample(100);
  fc.forward_peak = per_sample(200);
  fc.backward_start = per_sample(200);
  fc.backward_peak = per_sample(300);
  fc.forward_s = fc.backward_s = {0, 1e-4, 1e-4};
  LayerSpec head = fc;
  head.path = "lm_head";
  head.kind = "lm_head";
  head.saved = {saved("input", SlotKind::activation, 25, 4, "lm_head:input"),
                saved("logprobs", SlotKind::activation, 32, 4, "lm_head:logprobs", {4, 8})};
  head.forward_start = per_sample(200);
  head.forward_peak = per_sample(456);
  head.backward_start = per_sample(328);
  head.backward_peak = per_sample(684);
  head.forward_s = {0, 3e-4, 1e-4};
  spec.layers = {fc, head};
  const LayerModel m = fitted(spec);
  // A vocabulary of 8: chunks of lm_head_chunk_rows(8) = 2^18 rows are
  // c = 2^16 samples of 4 rows; b = 4c. The head's backward: S + 684b - 128b
  // (log-probabilities not stored) - 356 (b - c) (its gradients for b - c
  // fewer samples) + 128c (the chunk's recomputed log-probabilities) + 100b
  // (from its second chunk on, its input's gradient over every row)
  // = S + 300b + 484c.
  const int64_t c = lm_head_chunk_rows(8) / 4, b = 4 * c;
  ASSERT_EQ(c, 65536);
  EXPECT_DOUBLE_EQ(at(m, "keep", b).peak_bytes, S + 684 * b);
  const Estimate e = at(m, "recompute-all", b);
  EXPECT_DOUBLE_EQ(e.peak_bytes, S + 300 * b + 484 * c);
  // The extra forward of the head, in backward.
  EXPECT_NEAR(e.seconds - at(m, "keep", b).seconds, 3e-4 * b + 1e-4, 1e-12);
}

TEST(MemoryModel, LargestBatchIsTheLargestThatFits) {
  const LayerModel m = fitted(chain());
  const Target target = profiled_target(m);
  for (const char* name : {"keep", "quantize-4", "invert", "recompute-all", "recompute-all+quantize-2+invert"}) {
    const Plan plan = load_plan(name, m.layout(), m.network);
    const double budget = predict(m, target, plan, 300).peak_bytes + 1000;
    int64_t brute = 0;
    for (int64_t b = 1; b <= 2000 && predict(m, target, plan, b).peak_bytes <= budget; ++b) brute = b;
    EXPECT_EQ(max_batch(m, target, plan, budget), brute) << name;
    EXPECT_GE(brute, 300) << name;
  }
  EXPECT_EQ(max_batch(m, target, expand_plan_name("keep", m.layout()), S), 0);  // not even one sample
}

TEST(MemoryModel, ThePeakGrowsWithTheBatch) {
  const LayerModel m = fitted(testing::gpt_like(2));
  const Target target = profiled_target(m);
  for (const auto& name : plan_names(m, target)) {
    const Plan plan = expand_plan_name(name, m.layout());
    double previous = 0;
    for (int64_t b : {1, 2, 3, 5, 8, 13, 21, 34, 55, 89}) {
      const double peak = predict(m, target, plan, b).peak_bytes;
      EXPECT_GT(peak, previous) << name << " at " << b;
      previous = peak;
    }
  }
}

}  // namespace
}  // namespace papaya::model
