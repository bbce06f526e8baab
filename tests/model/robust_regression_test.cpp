#include "model/robust_regression.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace papaya::model {
namespace {

std::vector<double> batches(int from, int to, int step) {
  std::vector<double> out;
  for (int b = from; b <= to; b += step) out.push_back(b);
  return out;
}

TEST(RobustRegression, ExactLineIsRecovered) {
  const auto x = batches(8, 128, 8);
  std::vector<double> y;
  for (double b : x) y.push_back(3.5e6 * b + 2.1e9);  // bytes
  const LineFit fit = fit_line(x, y);
  EXPECT_NEAR(fit.slope, 3.5e6, 1e-6 * 3.5e6);
  EXPECT_NEAR(fit.intercept, 2.1e9, 1e-6 * 2.1e9);
  ASSERT_TRUE(fit.r2);
  EXPECT_NEAR(*fit.r2, 1.0, 1e-9);
}

TEST(RobustRegression, AnOutlierDoesNotDragTheLine) {
  const auto x = batches(4, 64, 4);
  std::vector<double> y;
  // +-1% deterministic jitter, and one run that reported 3x its peak.
  for (size_t i = 0; i < x.size(); ++i) y.push_back((0.002 * x[i] + 0.05) * (1 + 0.01 * std::sin(7.0 * i)));
  y[10] *= 3;
  const LineFit fit = fit_line(x, y);
  EXPECT_NEAR(fit.slope, 0.002, 0.02 * 0.002);
  EXPECT_NEAR(fit.intercept, 0.05, 0.05 * 0.05);
  // The R² is over every point, the outlier included: it shows.
  EXPECT_LT(*fit.r2, 0.9);

  // Least squares on the same points would be far off: the test can tell.
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) mx += x[i] / x.size(), my += y[i] / y.size();
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < x.size(); ++i) sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx);
  EXPECT_GT(std::fabs(sxy / sxx - 0.002), 0.1 * 0.002);
}

TEST(RobustRegression, PlateauThenLineIsRecovered) {
  const auto x = batches(4, 128, 4);
  std::vector<double> y;
  for (double b : x) y.push_back(std::max(0.1, 0.002 * b) + 0.03);  // knee at b = 50
  const PlateauFit fit = fit_plateau(x, y);
  EXPECT_NEAR(fit.a, 0.1, 1e-4);
  EXPECT_NEAR(fit.k, 0.002, 1e-6);
  EXPECT_NEAR(fit.c, 0.03, 1e-4);
  EXPECT_NEAR(fit.plateau_level(), 0.13, 1e-4);
  EXPECT_NEAR(*fit.r2, 1.0, 1e-6);
}

TEST(RobustRegression, PlateauFitOfALineIsTheLine) {
  const auto x = batches(8, 64, 8);
  std::vector<double> y;
  for (double b : x) y.push_back(0.004 * b + 0.08);
  const PlateauFit fit = fit_plateau(x, y);
  EXPECT_NEAR(fit.k, 0.004, 1e-8);
  EXPECT_NEAR(fit.c, 0.08, 1e-7);
  for (double b : x) EXPECT_NEAR(fit(b), 0.004 * b + 0.08, 1e-7);
}

TEST(RobustRegression, SlopesStayNonNegative) {
  const LineFit fit = fit_line({1, 2, 3, 4}, {4, 3, 2, 1});
  EXPECT_EQ(fit.slope, 0);
  EXPECT_NEAR(fit.intercept, 2.5, 0.6);
}

TEST(RobustRegression, TooFewPointsAreRefused) {
  EXPECT_THROW(fit_line({4, 4}, {1, 2}), std::invalid_argument);
  EXPECT_THROW(fit_plateau({1, 2, 3}, {1, 2, 3}), std::invalid_argument);
  EXPECT_FALSE(r_squared({2, 2, 2}, {2, 2, 2}).has_value());
}

}  // namespace
}  // namespace papaya::model
