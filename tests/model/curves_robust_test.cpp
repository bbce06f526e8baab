#include "model/curves.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace papaya::model {
namespace {

std::vector<Sample> samples(const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<Sample> out;
  for (size_t i = 0; i < x.size(); ++i) out.push_back({x[i], y[i]});
  return out;
}

std::vector<double> batches(int from, int to, int step) {
  std::vector<double> out;
  for (int b = from; b <= to; b += step) out.push_back(b);
  return out;
}

TEST(RobustCurves, ExactLineIsRecovered) {
  const auto x = batches(8, 128, 8);
  std::vector<double> y;
  for (double b : x) y.push_back(3.5e6 * b + 2.1e9);  // bytes
  const auto fit = fit_line_robust(samples(x, y));
  EXPECT_NEAR(fit.curve.per_sample, 3.5e6, 1e-6 * 3.5e6);
  EXPECT_NEAR(fit.curve.fixed, 2.1e9, 1e-6 * 2.1e9);
  ASSERT_TRUE(fit.r2);
  EXPECT_NEAR(*fit.r2, 1.0, 1e-9);
}

TEST(RobustCurves, AnOutlierDoesNotDragTheLine) {
  const auto x = batches(4, 64, 4);
  std::vector<double> y;
  // +-1% deterministic jitter, and one run that reported 3x its peak.
  for (size_t i = 0; i < x.size(); ++i) y.push_back((0.002 * x[i] + 0.05) * (1 + 0.01 * std::sin(7.0 * i)));
  y[10] *= 3;
  const auto fit = fit_line_robust(samples(x, y));
  EXPECT_NEAR(fit.curve.per_sample, 0.002, 0.02 * 0.002);
  EXPECT_NEAR(fit.curve.fixed, 0.05, 0.05 * 0.05);
  // The R² is over every point, the outlier included: it shows.
  EXPECT_LT(*fit.r2, 0.9);

  // Least squares on the same points would be far off: the test can tell.
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) mx += x[i] / x.size(), my += y[i] / y.size();
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < x.size(); ++i) sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx);
  EXPECT_GT(std::fabs(sxy / sxx - 0.002), 0.1 * 0.002);
}

TEST(RobustCurves, PlateauThenLineIsRecovered) {
  const auto x = batches(4, 128, 4);
  std::vector<double> y;
  for (double b : x) y.push_back(std::max(0.1, 0.002 * b) + 0.03);  // knee at b = 50
  const auto fit = fit_saturating_robust(samples(x, y));
  EXPECT_NEAR(fit.curve.floor, 0.1, 1e-4);
  EXPECT_NEAR(fit.curve.per_sample, 0.002, 1e-6);
  EXPECT_NEAR(fit.curve.fixed, 0.03, 1e-4);
  EXPECT_NEAR(fit.curve.floor_level(), 0.13, 1e-4);
  EXPECT_NEAR(*fit.r2, 1.0, 1e-6);
}

TEST(RobustCurves, PlateauFitOfALineIsTheLine) {
  const auto x = batches(8, 64, 8);
  std::vector<double> y;
  for (double b : x) y.push_back(0.004 * b + 0.08);
  const auto fit = fit_saturating_robust(samples(x, y));
  EXPECT_NEAR(fit.curve.per_sample, 0.004, 1e-8);
  EXPECT_NEAR(fit.curve.fixed, 0.08, 1e-7);
  for (double b : x) EXPECT_NEAR(fit.curve.at(b), 0.004 * b + 0.08, 1e-7);
}

TEST(RobustCurves, SlopesStayNonNegative) {
  const auto fit = fit_line_robust(samples({1, 2, 3, 4}, {4, 3, 2, 1}));
  EXPECT_EQ(fit.curve.per_sample, 0);
  EXPECT_NEAR(fit.curve.fixed, 2.5, 0.6);
}

TEST(RobustCurves, TooFewPointsAreRefused) {
  EXPECT_THROW(fit_line_robust(samples({4, 4}, {1, 2})), std::invalid_argument);
  EXPECT_THROW(fit_saturating_robust(samples({1, 2, 3}, {1, 2, 3})), std::invalid_argument);
  EXPECT_FALSE(r_squared({2, 2, 2}, {2, 2, 2}).has_value());
}

}  // namespace
}  // namespace papaya::model
