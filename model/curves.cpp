#include "model/curves.h"

#include <ceres/ceres.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "model/error.h"

namespace papaya::model {
namespace {

// Residual (max(a, k*b) + c - value) / scale of one sample.
struct SaturatingResidual {
  double batch, value, scale;
  template <typename T>
  bool operator()(const T* a, const T* k, const T* c, T* residual) const {
    const T kb = k[0] * T(batch);
    const T top = kb > a[0] ? kb : a[0];
    residual[0] = (top + c[0] - T(value)) / T(scale);
    return true;
  }
};

constexpr double huber_scale = 0.05;  // relative residuals beyond 5% count linearly

struct Solved {
  SaturatingCurve curve;
  double cost = 0;
};

Solved solve(const std::vector<Sample>& samples, const std::vector<double>& scales, SaturatingCurve start, bool with_floor,
             double min_fixed) {
  double a = with_floor ? std::max(0.0, start.floor) : 0.0;
  double k = std::max(0.0, start.per_sample);
  double c = std::max(min_fixed, start.fixed);
  ceres::Problem problem;
  for (size_t i = 0; i < samples.size(); ++i) {
    auto* cost = new ceres::AutoDiffCostFunction<SaturatingResidual, 1, 1, 1, 1>(
        new SaturatingResidual{samples[i].batch, samples[i].value, scales[i]});
    problem.AddResidualBlock(cost, new ceres::HuberLoss(huber_scale), &a, &k, &c);
  }
  problem.SetParameterLowerBound(&k, 0, 0.0);
  if (with_floor) {
    problem.SetParameterLowerBound(&a, 0, 0.0);
  } else {
    problem.SetParameterBlockConstant(&a);
  }
  if (std::isfinite(min_fixed)) problem.SetParameterLowerBound(&c, 0, min_fixed);
  ceres::Solver::Options options;
  options.linear_solver_type = ceres::DENSE_QR;
  options.max_num_iterations = 200;
  options.function_tolerance = 1e-14;
  options.parameter_tolerance = 1e-14;
  options.logging_type = ceres::SILENT;
  // A step whose linear model gains nothing (round-off at the optimum of
  // samples that span orders of magnitude, as a preempted timing beside a
  // layer that ran no tokens does) is "invalid": Ceres gives up after 5 in a
  // row and keeps nothing. Each one halves the trust region faster, so
  // allowing more ends at its minimum radius, converged, at the best point.
  options.max_num_consecutive_invalid_steps = 100;
  ceres::Solver::Summary summary;
  ceres::Solve(options, &problem, &summary);
  if (!summary.IsSolutionUsable() || !std::isfinite(summary.final_cost)) {
    throw InputError("the fit of max(a, k*b) + c did not converge (" + summary.message + ")");
  }
  return {{a, k, c}, summary.final_cost};
}

}  // namespace

LinearCurve fit_bytes(const std::vector<Sample>& samples) {
  double largest = 0, second = 0;
  for (const auto& s : samples) largest = std::max(largest, s.batch);
  for (const auto& s : samples) {
    if (s.batch < largest) second = std::max(second, s.batch);
  }
  std::vector<Sample> two;
  for (const auto& s : samples) {
    if (s.batch == largest || s.batch == second) two.push_back(s);
  }
  return fit_linear(two);
}

LinearCurve fit_linear(const std::vector<Sample>& samples) {
  double n = 0, sb = 0, sv = 0;
  for (const auto& s : samples) {
    n += 1;
    sb += s.batch;
    sv += s.value;
  }
  const double mb = sb / n, mv = sv / n;
  double sbb = 0, sbv = 0;
  for (const auto& s : samples) {
    sbb += (s.batch - mb) * (s.batch - mb);
    sbv += (s.batch - mb) * (s.value - mv);
  }
  LinearCurve line;
  line.per_sample = sbb > 0 ? sbv / sbb : 0;
  line.fixed = mv - line.per_sample * mb;
  return line;
}

double through_points(const std::vector<Sample>& points, double batch) {
  size_t k = 1;  // the segment from points[k - 1] to points[k]
  while (k + 1 < points.size() && batch > points[k].batch) ++k;
  const Sample &a = points[k - 1], &b = points[k];
  return a.value + (b.value - a.value) * (batch - a.batch) / (b.batch - a.batch);
}

double along_points(const SaturatingCurve& curve, const std::vector<Sample>& points, double batch) {
  if (points.size() < 2) return curve.at(batch);
  const Sample& end = batch < points.front().batch ? points.front() : points.back();
  if (batch >= points.front().batch && batch <= points.back().batch) return through_points(points, batch);
  return std::max(0.0, end.value + curve.at(batch) - curve.at(end.batch));
}

SaturatingCurve fit_saturating(const std::vector<Sample>& input, double min_fixed) {
  std::vector<Sample> samples = input;
  std::sort(samples.begin(), samples.end(), [](const Sample& x, const Sample& y) { return x.batch < y.batch; });
  double largest = 0;
  for (const auto& s : samples) largest = std::max(largest, std::fabs(s.value));
  std::vector<double> scales;
  for (const auto& s : samples) {
    const double own = min_fixed < 0 ? largest : std::fabs(s.value);
    scales.push_back(std::max({own, 1e-9 * largest, std::numeric_limits<double>::min()}));
  }

  const LinearCurve ols = fit_linear(samples);
  const Solved line = solve(samples, scales, {0, ols.per_sample, ols.fixed}, false, min_fixed);

  // A floor up to each gap between profiled batch sizes: flat before, the
  // line through the rest after.
  Solved best_floor{{}, std::numeric_limits<double>::infinity()};
  for (size_t split = 1; split < samples.size(); ++split) {
    if (samples[split].batch == samples[split - 1].batch) continue;
    double flat = 0;
    for (size_t i = 0; i < split; ++i) flat += samples[i].value / static_cast<double>(split);
    const std::vector<Sample> rest(samples.begin() + static_cast<long>(split), samples.end());
    LinearCurve after = fit_linear(rest);
    if (rest.size() == 1 || after.per_sample <= 0) {
      after.per_sample = std::max(0.0, (rest.back().value - flat) / (rest.back().batch - samples[split - 1].batch));
      after.fixed = rest.back().value - after.per_sample * rest.back().batch;
    }
    const Solved s = solve(samples, scales, {flat - after.fixed, after.per_sample, after.fixed}, true, min_fixed);
    if (s.cost < best_floor.cost) best_floor = s;
  }
  // The floor must cover the two smallest profiled batch sizes.
  double second = samples.front().batch;
  for (const auto& s : samples) {
    if (s.batch > samples.front().batch) {
      second = s.batch;
      break;
    }
  }
  const bool shown = best_floor.curve.floor >= best_floor.curve.per_sample * second;
  return shown && best_floor.cost < 0.5 * line.cost ? best_floor.curve : line.curve;
}

std::optional<double> r_squared(const std::vector<double>& measured, const std::vector<double>& predicted) {
  double mean = 0;
  for (double m : measured) mean += m / static_cast<double>(measured.size());
  double ss_res = 0, ss_tot = 0;
  for (size_t i = 0; i < measured.size(); ++i) {
    ss_res += (measured[i] - predicted[i]) * (measured[i] - predicted[i]);
    ss_tot += (measured[i] - mean) * (measured[i] - mean);
  }
  if (ss_tot <= 0) return std::nullopt;
  return 1.0 - ss_res / ss_tot;
}

}  // namespace papaya::model
