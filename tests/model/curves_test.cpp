#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model/curves.h"

namespace papaya::model {
namespace {

std::vector<Sample> sampled(const SaturatingCurve& c, const std::vector<double>& batches) {
  std::vector<Sample> s;
  for (double b : batches) s.push_back({b, c.at(b)});
  return s;
}

TEST(BatchCurves, LinearFitIsExactOnALine) {
  const LinearCurve line = fit_linear({{1, 1300}, {2, 1600}, {4, 2200}});
  EXPECT_DOUBLE_EQ(line.per_sample, 300);
  EXPECT_DOUBLE_EQ(line.fixed, 1000);
  EXPECT_DOUBLE_EQ(line.at(32), 10600);
}

// A convolution backward's transient as the CPU allocator saw it: 12
// activations of scratch at batch 1, then 3 activations and the weight
// gradient from batch 2 on; batch 32's, measured, is on the latter line.
TEST(BatchCurves, BytesFollowTheTwoLargestBatches) {
  const LinearCurve bytes = fit_bytes({{1, 50176}, {2, 33792}, {4, 58368}, {2, 33792}});
  EXPECT_DOUBLE_EQ(bytes.per_sample, 3 * 4096);
  EXPECT_DOUBLE_EQ(bytes.fixed, 9216);
  EXPECT_DOUBLE_EQ(bytes.at(32), 402432);
  EXPECT_LT(fit_linear({{1, 50176}, {2, 33792}, {4, 58368}}).at(32),
            300000);  // the batch-1 point drags a least-squares line down
}

TEST(BatchCurves, RecoversALine) {
  const SaturatingCurve truth{0, 2e-3, 5e-4};
  const SaturatingCurve fit = fit_saturating(sampled(truth, {1, 2, 4}));
  EXPECT_NEAR(fit.per_sample, 2e-3, 1e-9);
  EXPECT_NEAR(fit.fixed, 5e-4, 1e-9);
  EXPECT_NEAR(fit.at(32), truth.at(32), 1e-8);
}

TEST(BatchCurves, RecoversALatencyFloor) {
  // Flat up to b = 8 (a GPU kernel that is not yet saturated), then linear.
  const SaturatingCurve truth{8e-3, 1e-3, 2e-4};
  const SaturatingCurve fit = fit_saturating(sampled(truth, {1, 2, 4, 8, 16, 32}));
  EXPECT_NEAR(fit.floor, 8e-3, 1e-6);
  EXPECT_NEAR(fit.per_sample, 1e-3, 1e-7);
  EXPECT_NEAR(fit.fixed, 2e-4, 1e-6);
  EXPECT_NEAR(fit.at(64), truth.at(64), 1e-6);
}

TEST(BatchCurves, NoiseDoesNotBendALine) {
  // +-2% noise on a line at three batch sizes: no floor, and the slope within 5%.
  const SaturatingCurve fit = fit_saturating({{1, 1.02e-3 + 1e-4}, {2, 1.96e-3 + 1e-4}, {4, 4.04e-3 + 1e-4}});
  EXPECT_EQ(fit.floor, 0);
  EXPECT_NEAR(fit.per_sample, 1e-3, 5e-5);
}

TEST(BatchCurves, AnOutlierWeighsLessThanInLeastSquares) {
  std::vector<Sample> s;
  for (double b : {1, 2, 3, 4, 5, 6, 7, 8}) s.push_back({b, 1e-3 * b + 1e-3});
  s[3].value *= 2;  // one step disturbed by something else on the machine
  const SaturatingCurve robust = fit_saturating(s);
  const LinearCurve ols = fit_linear(s);
  EXPECT_LT(std::fabs(robust.per_sample - 1e-3), std::fabs(ols.per_sample - 1e-3));
  EXPECT_NEAR(robust.at(16), 17e-3, 0.05 * 17e-3);
}

TEST(BatchCurves, ARemainderMayBeNegative) {
  const SaturatingCurve fit = fit_saturating({{1, -2e-4}, {2, 0}, {4, 4e-4}}, -std::numeric_limits<double>::infinity());
  EXPECT_NEAR(fit.per_sample, 2e-4, 1e-8);
  EXPECT_NEAR(fit.fixed, -4e-4, 1e-8);
}

// Timings six orders of magnitude apart (a mixture's expert that ran almost
// no tokens at one batch, preempted at another) leave Ceres steps that gain
// nothing at round-off; the fit must still end, on a curve within the samples.
TEST(BatchCurves, SamplesOrdersOfMagnitudeApartStillFit) {
  const std::vector<std::vector<Sample>> wild = {
      {{1, 1.2834643736628971e-3}, {2, 9.6021658305178877e-4}, {4, 1.1994061532810974e-9}},
      {{1, 1.4022439085690356e-4}, {2, 1.2356259804200635e-8}, {4, 1.7882783320058939e-8}},
      {{1, 1.3772758141888071e-4}, {2, 1.89389097046985e-3}, {4, 1.1166853895092465e-9}}};
  for (const auto& s : wild) {
    const SaturatingCurve fit = fit_saturating(s);
    double low = s[0].value, high = s[0].value;
    for (const Sample& x : s) low = std::min(low, x.value), high = std::max(high, x.value);
    for (const Sample& x : s) {
      EXPECT_GE(fit.at(x.batch), low);
      EXPECT_LE(fit.at(x.batch), high);
    }
  }
}

// A time through the points it was measured at, and beyond them as its
// curve grows from the nearest.
TEST(BatchCurves, AlongPointsGoesThroughThemAndFollowsTheCurveBeyond) {
  const SaturatingCurve curve{0, 1.0, 2.0};
  const std::vector<Sample> points = {{4, 10}, {8, 12}, {16, 30}};
  EXPECT_DOUBLE_EQ(along_points(curve, points, 8), 12);
  EXPECT_DOUBLE_EQ(along_points(curve, points, 12), 21);
  EXPECT_DOUBLE_EQ(along_points(curve, points, 20), 34);                     // 30 + 4 more samples at 1.0
  EXPECT_DOUBLE_EQ(along_points(curve, points, 1), 7);                       // 10 - 3 samples
  EXPECT_DOUBLE_EQ(along_points(SaturatingCurve{0, 5.0, 0}, points, 1), 0);  // never below 0
  EXPECT_DOUBLE_EQ(along_points(curve, {{4, 10}}, 20), curve.at(20));        // one point: the curve
}

TEST(BatchCurves, RSquared) {
  EXPECT_DOUBLE_EQ(*r_squared({1, 2, 3}, {1, 2, 3}), 1.0);
  EXPECT_DOUBLE_EQ(*r_squared({1, 2, 3}, {2, 2, 2}), 0.0);
  EXPECT_FALSE(r_squared({2, 2, 2}, {2, 2, 2}).has_value());
  EXPECT_LT(*r_squared({1, 2, 3}, {3, 2, 1}), 0.0);
}

}  // namespace
}  // namespace papaya::model
