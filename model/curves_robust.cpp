#include "model/curves.h"

#include <ceres/ceres.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <set>
#include <stdexcept>

#include "model/median.h"

namespace papaya::model {
namespace {

// Ceres works on x and y divided by their largest magnitude, so that bytes and
// seconds are equally well conditioned.
struct Scaled {
  std::vector<double> x, y;
  double x_unit = 1, y_unit = 1;
};

double largest_magnitude(const std::vector<double>& v) {
  double m = 0;
  for (double e : v) m = std::max(m, std::fabs(e));
  return m > 0 ? m : 1;
}

Scaled scale(const std::vector<double>& x, const std::vector<double>& y) {
  Scaled s{x, y, largest_magnitude(x), largest_magnitude(y)};
  for (double& e : s.x) e /= s.x_unit;
  for (double& e : s.y) e /= s.y_unit;
  return s;
}

// The Cauchy loss's scale: 2.385 sigma (95% efficiency on Gaussian noise), sigma
// estimated as 1.4826 * median |residual|. The floor (relative to the largest
// |y|, which is 1 here) keeps exact data solvable.
double loss_scale(const std::vector<double>& residuals) {
  std::vector<double> magnitudes;
  for (double r : residuals) magnitudes.push_back(std::fabs(r));
  return std::max(2.385 * 1.4826 * median(magnitudes), 1e-9);
}

struct LineResidual {
  double x, y;
  template <typename T>
  bool operator()(const T* p, T* residual) const {
    residual[0] = T(y) - (p[0] * T(x) + p[1]);
    return true;
  }
};

struct PlateauResidual {
  double x, y;
  template <typename T>
  bool operator()(const T* p, T* residual) const {
    const T kx = p[1] * T(x);
    residual[0] = T(y) - ((p[0] > kx ? p[0] : kx) + p[2]);
    return true;
  }
};

template <typename Residual, int N>
void solve(const Scaled& d, std::array<double, N>& p, const std::vector<int>& non_negative, double loss_scale_value) {
  ceres::Problem::Options problem_options;
  problem_options.loss_function_ownership = ceres::DO_NOT_TAKE_OWNERSHIP;
  ceres::Problem problem(problem_options);
  ceres::CauchyLoss loss(loss_scale_value);
  for (size_t i = 0; i < d.x.size(); ++i) {
    problem.AddResidualBlock(new ceres::AutoDiffCostFunction<Residual, 1, N>(new Residual{d.x[i], d.y[i]}), &loss, p.data());
  }
  for (int i : non_negative) problem.SetParameterLowerBound(p.data(), i, 0.0);
  ceres::Solver::Options options;
  options.linear_solver_type = ceres::DENSE_QR;
  options.max_num_iterations = 200;
  options.function_tolerance = 1e-12;
  options.gradient_tolerance = 1e-14;
  options.parameter_tolerance = 1e-12;
  options.logging_type = ceres::SILENT;
  options.max_num_consecutive_invalid_steps = 100;  // round-off at the optimum: see curves.cpp
  ceres::Solver::Summary summary;
  ceres::Solve(options, &problem, &summary);
}

// Solves, re-estimates the loss scale from the new residuals, and solves again
// until the scale settles.
template <typename Residual, int N>
void robust_solve(const Scaled& d, std::array<double, N>& p, const std::vector<int>& non_negative,
                  const std::function<double(const std::array<double, N>&, double)>& predict) {
  const auto residuals = [&] {
    std::vector<double> r;
    for (size_t i = 0; i < d.x.size(); ++i) r.push_back(d.y[i] - predict(p, d.x[i]));
    return r;
  };
  double current = loss_scale(residuals());
  for (int round = 0; round < 8; ++round) {
    solve<Residual, N>(d, p, non_negative, current);
    const double next = loss_scale(residuals());
    if (std::fabs(next - current) <= 0.01 * current) break;
    current = next;
  }
}

// Ordinary least squares as the starting point, slope clamped at 0.
std::array<double, 2> least_squares_line(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) mx += x[i] / n, my += y[i] / n;
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < x.size(); ++i) sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx);
  const double slope = std::max(0.0, sxy / sxx);
  return {slope, my - slope * mx};
}

std::array<double, 2> robust_line(const Scaled& d) {
  std::array<double, 2> p = least_squares_line(d.x, d.y);
  robust_solve<LineResidual, 2>(d, p, {0}, [](const std::array<double, 2>& q, double x) { return q[0] * x + q[1]; });
  return p;
}

double plateau_value(const std::array<double, 3>& p, double x) { return std::max(p[0], p[1] * x) + p[2]; }

size_t distinct(const std::vector<double>& x) { return std::set<double>(x.begin(), x.end()).size(); }

struct KneeCandidate {
  double knee;
  std::array<double, 3> p;  // a, k, c
  double cost;              // sum of absolute residuals
};

KneeCandidate fit_knee(const Scaled& d, double knee) {
  Scaled flattened = d;
  for (double& e : flattened.x) e = std::max(knee, e);
  const auto line = robust_line(flattened);
  KneeCandidate out{knee, {line[0] * knee, line[0], line[1]}, 0};
  for (size_t i = 0; i < d.x.size(); ++i) out.cost += std::fabs(d.y[i] - plateau_value(out.p, d.x[i]));
  return out;
}

std::vector<double> batches(const std::vector<Sample>& samples) {
  std::vector<double> x;
  for (const auto& s : samples) x.push_back(s.batch);
  return x;
}

std::vector<double> values(const std::vector<Sample>& samples) {
  std::vector<double> y;
  for (const auto& s : samples) y.push_back(s.value);
  return y;
}

template <typename Curve>
RobustFit<Curve> with_r2(const Curve& curve, const std::vector<Sample>& samples) {
  std::vector<double> predicted;
  for (const auto& s : samples) predicted.push_back(curve.at(s.batch));
  return {curve, r_squared(values(samples), predicted)};
}

}  // namespace

RobustFit<LinearCurve> fit_line_robust(const std::vector<Sample>& samples) {
  const std::vector<double> x = batches(samples), y = values(samples);
  if (distinct(x) < 2) throw std::invalid_argument("fit_line_robust needs 2 distinct batch sizes");
  const Scaled d = scale(x, y);
  const auto p = robust_line(d);
  return with_r2(LinearCurve{p[0] * d.y_unit / d.x_unit, p[1] * d.y_unit}, samples);
}

RobustFit<SaturatingCurve> fit_saturating_robust(const std::vector<Sample>& samples) {
  const std::vector<double> x = batches(samples), y = values(samples);
  if (x.size() < 4 || distinct(x) < 2) {
    throw std::invalid_argument("fit_saturating_robust needs 4 points and 2 distinct batch sizes");
  }
  const Scaled d = scale(x, y);
  // max(a, k*x) is not smooth in the knee a/k, so the knee is searched first:
  // for a fixed knee q the model is the line c + k*max(q, x), fitted robustly
  // and scored by its absolute residuals. The score is tried at every measured
  // x (and q = 0, no plateau), then narrowed between the neighbours of the best
  // one; that knee starts the joint fit of a, k and c.
  std::vector<double> xs(d.x.begin(), d.x.end());
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  xs.insert(xs.begin(), 0.0);
  std::vector<KneeCandidate> tried;
  for (size_t i = 0; i + 1 < xs.size(); ++i) tried.push_back(fit_knee(d, xs[i]));
  const size_t best = static_cast<size_t>(
      std::min_element(tried.begin(), tried.end(), [](const auto& l, const auto& r) { return l.cost < r.cost; }) - tried.begin());
  // Golden-section search of the knee between the best one's neighbours.
  double lo = xs[best == 0 ? 0 : best - 1], hi = xs[best + 1];
  const double ratio = (std::sqrt(5.0) - 1) / 2;
  KneeCandidate left = fit_knee(d, hi - ratio * (hi - lo)), right = fit_knee(d, lo + ratio * (hi - lo));
  while (hi - lo > 1e-6) {
    if (left.cost < right.cost) {
      hi = right.knee, right = left, left = fit_knee(d, hi - ratio * (hi - lo));
    } else {
      lo = left.knee, left = right, right = fit_knee(d, lo + ratio * (hi - lo));
    }
  }
  std::array<double, 3> p = std::min({tried[best], left, right}, [](const auto& l, const auto& r) { return l.cost < r.cost; }).p;
  robust_solve<PlateauResidual, 3>(d, p, {0, 1}, plateau_value);
  return with_r2(SaturatingCurve{p[0] * d.y_unit, p[1] * d.y_unit / d.x_unit, p[2] * d.y_unit}, samples);
}

}  // namespace papaya::model
