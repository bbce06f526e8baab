#pragma once
// The two shapes papaya gives a measured quantity as a function of the batch
// size b, and their fits:
//   a line        alpha*b + beta     (bytes; PAPAYA's memory and time)
//   a saturation  max(a, k*b) + c    (a floor a up to b = a/k, then linear;
//                                     PAPAYA's later time form)
// Two families of fits, for two kinds of data:
//   - a profile: a few batch sizes (3-4), allocator bytes that are exact and
//     timings with little noise (fit_linear, fit_saturating);
//   - a measured series: many batch sizes, noisy, with outliers (PAPAYA's
//     data set): robust Cauchy fits (fit_line_robust, fit_saturating_robust).
#include <optional>
#include <vector>

namespace papaya::model {

struct LinearCurve {
  double per_sample = 0;  // alpha
  double fixed = 0;       // beta
  double at(double batch) const { return per_sample * batch + fixed; }
};

struct SaturatingCurve {
  double floor = 0;       // a
  double per_sample = 0;  // k
  double fixed = 0;       // c
  double at(double batch) const { return (per_sample * batch > floor ? per_sample * batch : floor) + fixed; }
  double floor_level() const { return floor + fixed; }  // the value up to the knee
  SaturatingCurve times(double factor) const { return {floor * factor, per_sample * factor, fixed * factor}; }
};

struct Sample {
  double batch = 0, value = 0;
};

// Ordinary least squares: exact when the points lie on a line. Needs two
// distinct batch sizes (the caller checks).
LinearCurve fit_linear(const std::vector<Sample>& samples);

// The broken line through `points` (at least two, batches ascending and
// distinct) at `batch`: from each point straight to the next, and beyond the
// first or the last along the segment there.
double through_points(const std::vector<Sample>& points, double batch);

// A time measured at `points` (batches ascending) and fitted by `curve`:
// the broken line through the points between the first and the last, and
// beyond them the nearest end point moved as the curve moves (never below
// 0); the curve alone where there are fewer than two points.
double along_points(const SaturatingCurve& curve, const std::vector<Sample>& points, double batch);

// A profile's allocator bytes, which are exact: the line through its two
// largest batch sizes (each one's mean). The points lie on one line unless
// an allocation changes its shape with the batch, and that happens at the
// smallest (oneDNN's convolution backward takes 12 activations of scratch
// at batch 1 and 3 from batch 2 on); the largest batches are the ones a
// prediction extrapolates from. Needs two distinct batch sizes.
LinearCurve fit_bytes(const std::vector<Sample>& samples);

// Robust fit (Ceres, Huber loss on relative residuals) with a, k >= 0 and
// c >= `min_fixed` (0 for a layer; -infinity for a remainder that may be
// negative). A floor is fitted only where two profiled batch sizes or more
// show it and it at least halves the residual cost of the plain line
// k*b + c: noise alone must not bend the curve. Values must be positive unless
// `min_fixed` < 0 (relative residuals then use the largest |value|).
SaturatingCurve fit_saturating(const std::vector<Sample>& samples, double min_fixed = 0);

// Robust fits of a measured series: a Cauchy loss whose scale follows the
// spread of the residuals (1.4826 * their median absolute value, re-estimated
// until it settles), so a few wild points do not drag the fit; slopes >= 0.
// R² is over every point, outliers included.
template <typename Curve>
struct RobustFit {
  Curve curve;
  std::optional<double> r2;  // absent where every value is the same
};
// Needs 2 distinct batch sizes; throws std::invalid_argument otherwise.
RobustFit<LinearCurve> fit_line_robust(const std::vector<Sample>& samples);
// Needs more points than its 3 parameters (4) and 2 distinct batch sizes.
RobustFit<SaturatingCurve> fit_saturating_robust(const std::vector<Sample>& samples);

// 1 - SS_res/SS_tot over (measured, predicted) pairs; absent where every
// measured value is the same.
std::optional<double> r_squared(const std::vector<double>& measured, const std::vector<double>& predicted);

}  // namespace papaya::model
