#pragma once
// The two shapes the performance model gives a measured quantity as a
// function of the batch size b, and their fits to measurements at a few
// batch sizes:
//   bytes:   alpha*b + beta            (allocator figures: exact on CPU)
//   seconds: max(a, k*b) + c           (a latency floor a up to b = a/k, then
//                                       linear; PAPAYA's later revision)
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
};

struct Sample {
  double batch = 0, value = 0;
};

// Ordinary least squares: exact when the points lie on a line. Needs two
// distinct batch sizes (the caller checks).
LinearCurve fit_linear(const std::vector<Sample>& samples);

// Robust fit (Ceres, Huber loss on relative residuals) with a, k >= 0 and
// c >= `min_fixed` (0 for a layer; -infinity for a remainder that may be
// negative). A floor is fitted only where two profiled batch sizes or more
// show it and it at least halves the residual cost of the plain line
// k*b + c: noise alone must not bend the curve. Values must be positive unless
// `min_fixed` < 0 (relative residuals then use the largest |value|).
SaturatingCurve fit_saturating(const std::vector<Sample>& samples, double min_fixed = 0);

// 1 - SS_res/SS_tot over (measured, predicted) pairs; 1 when SS_tot is 0
// and the predictions are exact.
double r_squared(const std::vector<double>& measured, const std::vector<double>& predicted);

}  // namespace papaya::model
