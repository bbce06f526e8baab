// Step time: recovery of known per-layer curves, the costs each strategy
// adds, and the swap overlap.
#include <gtest/gtest.h>

#include <random>

#include "model/fit/fit_profile.h"
#include "model/layer_model.h"
#include "model/plan_space/predict.h"
#include "tests/support/synthetic_profile.h"

namespace papaya::model {
namespace {

using testing::gpt_like;
using testing::make_profile;
using testing::ProfileSpec;

double true_seconds(const ProfileSpec& spec, double b) {
  double t = spec.optimizer_s.at(b) + spec.rest_s.at(b);
  for (const auto& l : spec.layers) t += l.forward_s.at(b) + l.backward_s.at(b);
  return t;
}

TEST(TimeModel, RecoversPerLayerCurvesAndPredictsLargerBatches) {
  ProfileSpec spec = gpt_like(2);
  spec.layers[3].forward_s = {4e-4, 1e-5, 3e-5};  // latency-bound up to b = 40
  spec.batches = {1, 2, 4, 8, 64, 128};
  const ProfileFit fit = fit_profile(make_profile(spec), "synthetic");
  for (size_t l = 0; l < spec.layers.size(); ++l) {
    for (double b : {16.0, 128.0}) {
      EXPECT_NEAR(fit.model.layers[l].forward_seconds.at(b), spec.layers[l].forward_s.at(b),
                  1e-6 * spec.layers[l].forward_s.at(b))
          << spec.layers[l].path;
      EXPECT_NEAR(fit.model.layers[l].backward_seconds.at(b), spec.layers[l].backward_s.at(b),
                  1e-6 * spec.layers[l].backward_s.at(b));
    }
  }
  EXPECT_NEAR(fit.model.layers[3].forward_seconds.floor, 4e-4, 1e-8);
  const Target target = profiled_target(fit.model);
  const Plan keep = expand_plan_name("keep", fit.model.layout());
  for (int64_t b : {16, 100}) {
    EXPECT_NEAR(predict(fit.model, target, keep, b).seconds, true_seconds(spec, static_cast<double>(b)),
                1e-6 * true_seconds(spec, static_cast<double>(b)));
  }
  EXPECT_GT(fit.quality.time.r_squared, 0.999999);
  EXPECT_LT(fit.quality.time.worst_relative, 1e-6);
}

// predict says so where a batch lies far beyond the profiled ones.
TEST(TimeModel, NotesABatchMoreThanTwiceTheLargestProfiled) {
  ProfileSpec spec = gpt_like(1);
  spec.batches = {1, 2, 4};
  const LayerModel m = fit_profile(make_profile(spec), "synthetic").model;
  EXPECT_FALSE(extrapolation_note(m, 2));
  EXPECT_FALSE(extrapolation_note(m, 8));
  const auto note = extrapolation_note(m, 32);
  ASSERT_TRUE(note);
  EXPECT_NE(note->find("batch 32 is 8x the largest profiled batch (4)"), std::string::npos) << *note;
}

// Each layer (and segment) timed alone at a probe batch gives its curve a
// point beyond the profiled batches: layers whose time is flat over 1, 2, 4
// (latency-bound) and grows from 40 on are priced at the probe batch as
// measured there, where the profile alone extrapolates the flat part.
TEST(TimeModel, AProbeBatchAnchorsTheCurvesBeyondTheProfiledBatches) {
  ProfileSpec spec = gpt_like(1);
  for (auto& l : spec.layers) {
    l.forward_s = {4e-4, 1e-5, 3e-5};
    l.backward_s = {8e-4, 2e-5, 3e-5};
  }
  for (auto& s : spec.segments) s.recompute_s = {1e-3, 2e-5, 1e-5};
  spec.batches = {1, 2, 4};
  Profile profile = make_profile(spec);
  const LayerModel without = fit_profile(profile, "synthetic").model;
  profile.probe_batch = 128;
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    profile.layers[i].probe = LayerProbe{spec.layers[i].forward_s.at(128), spec.layers[i].backward_s.at(128)};
  }
  for (size_t i = 0; i < spec.segments.size(); ++i)
    profile.segments[i].probe = SegmentProbe{spec.segments[i].recompute_s.at(128), 0};
  const LayerModel with = layer_model_from_json(layer_model_to_json(fit_profile(profile, "synthetic").model), "model");
  EXPECT_EQ(with.probe_batch, 128);
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const double forward = spec.layers[i].forward_s.at(128), backward = spec.layers[i].backward_s.at(128);
    EXPECT_NEAR(with.layers[i].forward_seconds.at(128), forward, 1e-3 * forward) << spec.layers[i].path;
    EXPECT_NEAR(with.layers[i].backward_seconds.at(128), backward, 1e-3 * backward) << spec.layers[i].path;
    EXPECT_LT(without.layers[i].forward_seconds.at(128), 0.5 * forward) << spec.layers[i].path;
  }
  for (size_t i = 0; i < spec.segments.size(); ++i) {
    const double recompute = spec.segments[i].recompute_s.at(128);
    EXPECT_NEAR(with.segments[i].recompute_seconds.at(128), recompute, 1e-3 * recompute) << spec.segments[i].path;
  }
  // Time is extrapolated past the probe batch, not past the profiled ones.
  EXPECT_FALSE(extrapolation_note(with, 256));
  const auto note = extrapolation_note(with, 300);
  ASSERT_TRUE(note);
  EXPECT_NE(note->find("the largest batch its layers were timed at (128, probed alone)"), std::string::npos) << *note;
}

// A kernel that changes with the batch between the profiled batches and the
// probe's (LibTorch's 1x1 convolution, one thread: im2col and a product per
// sample below 16, oneDNN from 16 on) bends a layer's time there, which no
// curve through 1, 2, 4 and the probe's 64 follows. The probe's rungs at 8,
// 16 and 32, timed, are points the model's time goes through; past the
// probe batch it grows as the curve does.
TEST(TimeModel, TimedRungsArePointsTheTimeGoesThrough) {
  ProfileSpec spec = gpt_like(1);
  spec.batches = {1, 2, 4};
  // Per sample 2e-5 forward and 4e-5 backward below 16, a tenth from 16 on.
  const auto forward = [](double b) { return b < 16 ? 1e-4 + 2e-5 * b : 4.2e-4 + 2e-6 * (b - 16); };
  const auto backward = [&](double b) { return 2 * forward(b); };
  for (auto& l : spec.layers) {
    l.forward_s = {0, 2e-5, 1e-4};  // the profiled batches lie on the part below 16
    l.backward_s = {0, 4e-5, 2e-4};
  }
  Profile profile = make_profile(spec);
  profile.probe_batch = 64;
  for (auto& l : profile.layers) {
    l.probe = LayerProbe{forward(64), backward(64), 0, 0, {}};
    for (int64_t b : {2, 4, 8, 16, 32}) l.probe->rungs.push_back({b, 0, 0, forward(b), backward(b)});
  }
  const LayerModel timed = layer_model_from_json(layer_model_to_json(fit_profile(profile, "synthetic").model), "model");
  for (auto& l : profile.layers) {
    for (auto& r : l.probe->rungs) r.forward_s = r.backward_s = 0;  // a profile from before rungs were timed
  }
  const LayerModel untimed = fit_profile(profile, "synthetic").model;
  for (const LayerFit& l : timed.layers) {
    for (double b : {1.0, 4.0, 8.0, 16.0, 32.0, 64.0}) {
      EXPECT_NEAR(forward_seconds_at(l, b), forward(b), 1e-9 * forward(b)) << l.path << " at " << b;
      EXPECT_NEAR(backward_seconds_at(l, b), backward(b), 1e-9 * backward(b)) << l.path << " at " << b;
    }
    // Between two points, the line through them.
    EXPECT_NEAR(forward_seconds_at(l, 12), (forward(8) + forward(16)) / 2, 1e-9 * forward(12)) << l.path;
    // Past the probe batch, its time there plus the curve's growth.
    EXPECT_NEAR(forward_seconds_at(l, 128), forward(64) + l.forward_seconds.at(128) - l.forward_seconds.at(64),
                1e-9 * forward(128))
        << l.path;
  }
  const Target on_timed = profiled_target(timed), on_untimed = profiled_target(untimed);
  const Plan keep = expand_plan_name("keep", timed.layout());
  for (int64_t b : {8, 16}) {
    double truth = spec.optimizer_s.at(static_cast<double>(b)) + spec.rest_s.at(static_cast<double>(b));
    for (size_t i = 0; i < spec.layers.size(); ++i) truth += forward(static_cast<double>(b)) + backward(static_cast<double>(b));
    EXPECT_NEAR(predict(timed, on_timed, keep, b).seconds, truth, 1e-6 * truth) << "batch " << b;
    // The curve alone cuts across the bend: off by more than a tenth.
    EXPECT_GT(std::fabs(predict(untimed, on_untimed, keep, b).seconds / truth - 1), 0.1) << "batch " << b;
  }
}

// The rest of the iteration (work between layers) at the probe batch: the
// segments' work between their layers there, plus a fixed part outside them.
// One noisy rest at batch 4 (+50%) no longer sets its slope.
TEST(TimeModel, TheRestAtTheProbeBatchIsTheSegmentsWorkBetweenTheirLayersPlusAFixedPart) {
  ProfileSpec spec = gpt_like(2);
  spec.rest_s = {0, 1e-5, 2e-4};  // 2e-4 outside the segments, 0.5e-5 per sample within each
  Profile profile = make_profile(spec);
  ASSERT_EQ(profile.batches, (std::vector<int>{1, 2, 4}));
  ASSERT_EQ(profile.segments.size(), 2u);
  profile.iterations[2].iteration_s += 1.2e-4;
  const LayerModel without = fit_profile(profile, "synthetic").model;
  profile.probe_batch = 128;
  for (auto& s : profile.segments) {
    s.between_s = {0.5e-5, 1e-5, 2e-5};
    s.probe = SegmentProbe{s.recompute_s.back() * 32, 0.5e-5 * 128};
  }
  const LayerModel with = fit_profile(profile, "synthetic").model;
  for (double b : {32.0, 128.0}) {
    const double truth = spec.rest_s.at(b);
    EXPECT_NEAR(with.rest_seconds.at(b), truth, 0.1 * truth) << "batch " << b;
    EXPECT_GT(without.rest_seconds.at(b), 1.5 * truth) << "batch " << b;
  }
}

TEST(TimeModel, NoisyProfileStillPredictsWithinThreePercent) {
  // +-3% noise on every layer's measured times at batches 1, 2, 4, and on the
  // rest of each iteration; predictions at 16 and 32.
  ProfileSpec spec = gpt_like(2);
  Profile profile = make_profile(spec);
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> noise(0.97, 1.03);
  for (size_t i = 0; i < profile.batches.size(); ++i) {
    double layers = 0;
    for (auto& l : profile.layers) {
      l.measured[i].forward_s *= noise(rng);
      l.measured[i].backward_s *= noise(rng);
      layers += l.measured[i].forward_s + l.measured[i].backward_s;
    }
    const double b = profile.batches[i];
    profile.iterations[i].iteration_s = layers + spec.optimizer_s.at(b) + spec.rest_s.at(b) * noise(rng);
  }
  const ProfileFit fit = fit_profile(profile, "noisy");
  const Target target = profiled_target(fit.model);
  const Plan keep = expand_plan_name("keep", fit.model.layout());
  for (int64_t b : {16, 32}) {
    const double truth = true_seconds(spec, static_cast<double>(b));
    EXPECT_NEAR(predict(fit.model, target, keep, b).seconds, truth, 0.03 * truth) << b;
  }
}

TEST(TimeModel, StepTimeGrowsWithTheBatchForEveryPlan) {
  ProfileSpec spec = gpt_like(2);
  spec.device = "cuda:0";
  spec.device_name = "test gpu";
  spec.link_bytes_per_s = 1e9;
  const LayerModel m = fit_profile(make_profile(spec), "synthetic").model;
  const Target target = profiled_target(m);
  const double keep32 = predict(m, target, expand_plan_name("keep", m.layout()), 32).seconds;
  for (const auto& name : plan_names(m, target)) {
    const Plan plan = expand_plan_name(name, m.layout());
    double previous = 0;
    for (int64_t b : {1, 2, 4, 8, 16, 32, 64, 128}) {
      const Estimate e = predict(m, target, plan, b);
      EXPECT_GT(e.seconds, previous) << name << " at " << b;
      EXPECT_NEAR(e.samples_per_s, static_cast<double>(b) / e.seconds, 1e-9 * e.samples_per_s);
      previous = e.seconds;
    }
    // Every memory optimization costs time.
    if (name != "keep") {
      EXPECT_GT(predict(m, target, plan, 32).seconds, keep32) << name;
    }
  }
}

TEST(TimeModel, RecomputeAddsEachSegmentsForwardAndTheHeadsForward) {
  const ProfileSpec spec = gpt_like(3);
  const LayerModel m = fit_profile(make_profile(spec), "synthetic").model;
  const Target target = profiled_target(m);
  const double b = 16;
  double expected = 0;
  for (const auto& s : spec.segments) expected += s.recompute_s.at(b);
  expected += spec.layers[spec.layers.size() - 2].forward_s.at(b);  // lm_head, recomputing its log-probabilities
  const double keep = predict(m, target, expand_plan_name("keep", m.layout()), 16).seconds;
  EXPECT_NEAR(predict(m, target, expand_plan_name("recompute-all", m.layout()), 16).seconds - keep, expected, 1e-12);
}

// A plan step (profile.h) that took longer beyond keep than the model says
// sets the per-call costs so that the model says what it took; one that took
// less changes nothing. Keep is the keep step paired with it where there is
// one.
TEST(TimeModel, PlanStepsCalibrateTheCostOfACodecCallAndOfARecomputedSegment) {
  const ProfileSpec spec = gpt_like(2);
  const LayerModel plain = fit_profile(make_profile(spec), "synthetic").model;
  const auto beyond_keep = [](const LayerModel& m, const std::string& plan) {
    const Target target = profiled_target(m);
    return predict(m, target, expand_plan_name(plan, m.layout()), 1).seconds -
           predict(m, target, expand_plan_name("keep", m.layout()), 1).seconds;
  };
  const double keep_measured = make_profile(spec).iterations.front().iteration_s;
  for (const std::string plan : {"quantize-8", "recompute-all"}) {
    ProfileSpec slower = spec;
    slower.plan_steps = {{plan, 1, keep_measured + beyond_keep(plain, plan) + 300e-6}};
    const LayerModel calibrated = fit_profile(make_profile(slower), "synthetic").model;
    EXPECT_NEAR(beyond_keep(calibrated, plan), beyond_keep(plain, plan) + 300e-6, 1e-12) << plan;
    ProfileSpec faster = spec;
    faster.plan_steps = {{plan, 1, keep_measured + beyond_keep(plain, plan) - 300e-6}};
    EXPECT_EQ(beyond_keep(fit_profile(make_profile(faster), "synthetic").model, plan), beyond_keep(plain, plan)) << plan;
    // Beside a keep step of its own, taken in a slow moment (5 ms longer
    // than the batch's iteration), the plan's step is compared with that.
    ProfileSpec paired = spec;
    const double slow_keep = keep_measured + 5e-3;
    paired.plan_steps = {{plan, 1, slow_keep + beyond_keep(plain, plan) + 300e-6, slow_keep}};
    const LayerModel calibrated_paired = fit_profile(make_profile(paired), "synthetic").model;
    EXPECT_NEAR(beyond_keep(calibrated_paired, plan), beyond_keep(plain, plan) + 300e-6, 1e-12) << plan;
  }
}

TEST(TimeModel, QuantizeCostsPackAndUnpackAtTheCodecThroughput) {
  // One layer saving 1e6 fp32 values per sample; 4-bit codec at 1 GB/s pack,
  // 2 GB/s unpack: 4 MB per sample costs 4 ms + 2 ms.
  ProfileSpec spec;
  spec.static_bytes = 1000;
  testing::LayerSpec l;
  l.path = "fc";
  l.kind = "linear";
  l.saved = {testing::saved("input", SlotKind::activation, 1e6, 4, "fc:input")};
  l.forward_start = {0, 1000};
  l.forward_peak = l.backward_start = l.backward_peak = {4e6, 1000};
  l.forward_s = {0, 1e-3, 0};
  l.backward_s = {0, 2e-3, 0};
  spec.layers = {l};
  spec.codecs = {{4, 1e9, 2e9}};
  const LayerModel m = fit_profile(make_profile(spec), "synthetic").model;
  const Target target = profiled_target(m);
  const double keep = predict(m, target, expand_plan_name("keep", m.layout()), 2).seconds;
  EXPECT_NEAR(predict(m, target, expand_plan_name("quantize-4", m.layout()), 2).seconds - keep, 2 * (4e-3 + 2e-3), 1e-12);
}

TEST(TimeModel, SwapStallsWhereTheLinkIsSlowerThanCompute) {
  // Two layers saving 1e6 bytes per sample each, forward 1 ms and backward
  // 2 ms at b = 1, a 1 GB/s link (1 ms per copy). Forward: layer 0's copy
  // hides behind layer 1; layer 1's does not (+1 ms before backward).
  // Backward: layer 1's data must come back first (+1 ms); layer 0's is
  // fetched during layer 1's backward. Total 6 ms compute + 2 ms.
  ProfileSpec spec;
  spec.static_bytes = 1000;
  spec.device = "cuda:0";
  spec.device_name = "test gpu";
  for (const char* path : {"a", "b"}) {
    testing::LayerSpec l;
    l.path = path;
    l.kind = "linear";
    l.saved = {testing::saved("input", SlotKind::activation, 2.5e5, 4, std::string(path) + ":input")};
    l.forward_start = {0, 1000};
    l.forward_peak = l.backward_start = l.backward_peak = {2e6, 1000};
    l.forward_s = {0, 1e-3, 0};
    l.backward_s = {0, 2e-3, 0};
    spec.layers.push_back(l);
  }
  for (double link : {1e9, 1e15}) {
    spec.link_bytes_per_s = link;
    const LayerModel m = fit_profile(make_profile(spec), "synthetic").model;
    const Target target = profiled_target(m);
    const double keep = predict(m, target, expand_plan_name("keep", m.layout()), 1).seconds;
    const double swap = predict(m, target, expand_plan_name("swap", m.layout()), 1).seconds;
    EXPECT_NEAR(keep, 6e-3, 1e-12);
    EXPECT_NEAR(swap - keep, link == 1e9 ? 2e-3 : 0, 1e-8) << link;
  }
}

}  // namespace
}  // namespace papaya::model
