#pragma once
// Robust fits of the two shapes the performance model is made of, with Ceres:
//   a line     y = slope*x + intercept
//   a plateau  y = max(a, k*x) + c   (flat at a + c up to the knee x = a/k,
//                                      then a line of slope k)
// Both minimise a Cauchy loss whose scale follows the spread of the residuals
// (1.4826 * their median absolute value, re-estimated until it settles), so a
// few wild points do not drag the fit. Slopes are kept >= 0: memory and time
// grow with the batch.
#include <optional>
#include <vector>

namespace papaya::model {

struct LineFit {
  double slope = 0;
  double intercept = 0;
  std::optional<double> r2;  // absent where every y is the same

  double operator()(double x) const { return slope * x + intercept; }
};

struct PlateauFit {
  double a = 0;
  double k = 0;
  double c = 0;
  std::optional<double> r2;

  double operator()(double x) const;
  double plateau_level() const { return a + c; }  // y up to the knee
};

// Needs at least 2 distinct x; throws std::invalid_argument otherwise.
LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y);

// Needs more points than its 3 parameters (4) and 2 distinct x.
PlateauFit fit_plateau(const std::vector<double>& x, const std::vector<double>& y);

// 1 - SS_residual / SS_total over all points; absent where every y is the same.
std::optional<double> r_squared(const std::vector<double>& observed, const std::vector<double>& predicted);

}  // namespace papaya::model
