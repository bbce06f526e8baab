#include "model/fit/global_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "model/catalog/hardware.h"
#include "model/error.h"

namespace papaya::model {
namespace {

size_t distinct(const std::vector<Sample>& samples) {
  std::set<double> batches;
  for (const auto& s : samples) batches.insert(s.batch);
  return batches.size();
}

void fit_memory(const MeasuredSeries& series, SeriesFit& fit) {
  std::vector<Sample> peaks;
  for (const auto& run : series.runs) {
    if (!run.oom && run.peak_bytes) peaks.push_back({static_cast<double>(run.batch), *run.peak_bytes});
  }
  fit.memory_points = static_cast<int>(peaks.size());
  if (distinct(peaks) < 2) {
    fit.notes.push_back("memory not fitted: peaks at " + std::to_string(distinct(peaks)) + " batch size(s), 2 needed");
  } else if (peaks.size() >= 4) {
    fit.memory = fit_saturating_robust(peaks);
  } else {
    const auto line = fit_line_robust(peaks);
    fit.memory = RobustFit<SaturatingCurve>{{0, line.curve.per_sample, line.curve.fixed}, line.r2};
  }
}

// A negative intercept makes b / T(b) grow without bound toward batch 1,
// batches the runs never saw (PAPAYA's ResNet-50 quantize4 on 2 V100s, flat
// at 541-548 samples/s over batches 264-424, fits delta = -0.00096 s). The
// line through the origin, least squares, is the flat throughput the runs show.
void refit_through_origin(const std::vector<Sample>& seconds, SeriesFit& fit) {
  double bt = 0, bb = 0;
  for (const auto& s : seconds) {
    bt += s.batch * s.value;
    bb += s.batch * s.batch;
  }
  const LinearCurve line{bt / bb, 0};
  std::vector<double> measured, predicted;
  for (const auto& s : seconds) {
    measured.push_back(s.value);
    predicted.push_back(line.at(s.batch));
  }
  fit.notes.push_back("time line refitted through the origin: its intercept was negative (delta " +
                      std::to_string(fit.time_linear->curve.fixed) + " s), which would put the best samples/s at batch 1");
  fit.time_linear = RobustFit<LinearCurve>{line, r_squared(measured, predicted)};
}

void fit_time(const MeasuredSeries& series, SeriesFit& fit) {
  std::vector<Sample> seconds;
  for (const auto& run : series.runs) {
    if (!run.oom) seconds.push_back({static_cast<double>(run.batch), run.iteration_s()});
  }
  if (distinct(seconds) < 2) {
    fit.notes.push_back("time not fitted: runs at " + std::to_string(distinct(seconds)) + " batch size(s), 2 needed");
    return;
  }
  fit.time_linear = fit_line_robust(seconds);
  if (fit.time_linear->curve.fixed < 0) refit_through_origin(seconds, fit);
  if (seconds.size() >= 4) {
    fit.time_max = fit_saturating_robust(seconds);
  } else {
    fit.notes.push_back("max(a, k*b) + c not fitted: " + std::to_string(seconds.size()) + " runs, 4 needed");
  }
}

void bound_by_ooms(const MeasuredSeries& series, SeriesFit& fit) {
  const MeasuredRun* largest = nullptr;
  for (const auto& run : series.runs) {
    if (!run.oom && (!largest || run.batch > largest->batch)) largest = &run;
  }
  for (const auto& run : series.runs) {
    if (!run.oom) continue;
    if (largest && run.batch < largest->batch) {
      fit.notes.push_back("line " + std::to_string(run.line) + ": out of memory at batch " + std::to_string(run.batch) +
                          ", yet batch " + std::to_string(largest->batch) + " ran (line " + std::to_string(largest->line) +
                          "): not a bound");
    } else if (!fit.smallest_oom_batch || run.batch < *fit.smallest_oom_batch) {
      fit.smallest_oom_batch = run.batch;
    }
  }
}

void find_max_batch(const MeasuredSeries& series, SeriesFit& fit) {
  if (fit.memory && fit.memory->curve.per_sample > 0) {
    const double b = fit.memory->curve.floor_level() > fit.budget_bytes
                         ? 0
                         : std::floor((fit.budget_bytes - fit.memory->curve.fixed) / fit.memory->curve.per_sample);
    fit.max_batch = static_cast<int>(std::min(b, 1e9));
    fit.max_batch_limit = "memory";
  } else if (fit.memory) {
    fit.notes.push_back("the fitted peak does not grow with the batch");
  }
  // The OOM runs had the GPU's whole memory: they bound no larger budget. Of
  // a GPU outside the catalog the budget is the only memory figure: they bind.
  const bool oom_binds = fit.smallest_oom_batch && (!series.gpu_memory_bytes || fit.budget_bytes <= *series.gpu_memory_bytes);
  if (oom_binds && (!fit.max_batch || *fit.max_batch >= *fit.smallest_oom_batch)) {
    fit.max_batch = *fit.smallest_oom_batch - 1;
    fit.max_batch_limit = "oom";
  }
  if (!fit.max_batch) fit.notes.push_back("no largest batch: neither a memory fit nor an OOM run bounds it");
}

void find_best(const MeasuredSeries& series, SeriesFit& fit) {
  // Without a b*, every run that ran fitted the GPU: the best of them is a best measured.
  const int limit = fit.max_batch.value_or(std::numeric_limits<int>::max());
  for (const auto& run : series.runs) {
    if (run.oom || run.batch > limit) continue;
    if (!fit.best_measured_samples_per_s || run.throughput() > *fit.best_measured_samples_per_s) {
      fit.best_measured_samples_per_s = run.throughput();
      fit.best_measured_batch = run.batch;
    }
  }
  if (!fit.max_batch) return;
  if (limit < 1) {
    fit.notes.push_back("batch 1 does not fit the budget");
    return;
  }
  if (!fit.time_linear) return;
  for (double b : fit.rate_candidates(limit)) {
    if (fit.iteration_s(b) <= 0) continue;
    const double rate = b / fit.iteration_s(b);
    if (!fit.best_samples_per_s || rate > *fit.best_samples_per_s) {
      fit.best_samples_per_s = rate;
      fit.best_batch = static_cast<int>(b);
    }
  }
}

// The budget given, else the series' GPU's memory; a GPU outside the catalog
// has none, so its series needs a budget.
double budget_for(const MeasuredSeries& series, std::optional<double> budget_bytes, const std::string& source) {
  if (budget_bytes) return *budget_bytes;
  if (series.gpu_memory_bytes) return *series.gpu_memory_bytes;
  throw InputError(source + ":" + std::to_string(series.runs.front().line) + ": gpu '" + series.gpu +
                   "' is not in the hardware catalog (" + hardware_names() +
                   "): give a budget, the memory to fit its runs for, or name a catalog GPU");
}

SeriesFit fit_series(const MeasuredSeries& series, double budget_bytes) {
  SeriesFit fit;
  fit.gpu = series.gpu;
  fit.gpus = series.gpus;
  fit.network = series.network;
  fit.precision = series.precision;
  fit.strategy = series.strategy;
  fit.budget_bytes = budget_bytes;
  fit.measured = series;
  std::set<int> batches;
  for (const auto& run : series.runs) {
    fit.points += !run.oom;
    if (!run.oom) batches.insert(run.batch);
  }
  fit.batches = static_cast<int>(batches.size());
  if (!batches.empty()) fit.smallest_batch = *batches.begin();
  if (series.peak_was_bytes)
    fit.notes.push_back("peak_mib read as bytes: every value is above any memory the GPU can have in MiB");
  bound_by_ooms(series, fit);
  if (fit.points == 0) {
    fit.notes.push_back("not fitted: every run ran out of memory");
  } else {
    fit_memory(series, fit);
    fit_time(series, fit);
  }
  find_max_batch(series, fit);
  find_best(series, fit);
  return fit;
}

Verdict judge(const SeriesFit& fit, const SeriesFit* baseline) {
  Verdict v;
  if (!baseline) {
    v.note = "no '" + std::string(kBaselineStrategy) + "' series in " + fit.precision + " to compare with";
    return v;
  }
  v.baseline_best_samples_per_s = baseline->best_samples_per_s;
  v.baseline_best_measured_samples_per_s = baseline->best_measured_samples_per_s;
  if (!fit.max_batch && !baseline->max_batch && (fit.batches < 2 || baseline->batches < 2)) {
    v.note = "not decided: neither series has a largest batch, and " +
             std::string(fit.batches < 2 ? "this series" : "the baseline") +
             " ran at one batch, which says nothing of what a larger batch would give";
    return v;
  }
  if (!fit.max_batch && !baseline->max_batch && fit.best_measured_samples_per_s && baseline->best_measured_samples_per_s) {
    v.helps = *fit.best_measured_samples_per_s > *baseline->best_measured_samples_per_s;
    v.note = "decided on the best runs: neither series has a largest batch (no peak, no OOM row)";
    return v;
  }
  if (fit.best_samples_per_s && baseline->max_batch == 0) {
    v.helps = true;
    v.note = "the baseline does not fit batch 1";
    return v;
  }
  if (!fit.best_samples_per_s || !baseline->best_samples_per_s) {
    v.note = std::string("not decided: ") + (fit.best_samples_per_s ? "the baseline" : "this series") + " has no best throughput";
    return v;
  }
  v.helps = *fit.best_samples_per_s > *baseline->best_samples_per_s;
  const bool fitted = fit.memory && fit.time_linear && baseline->memory && baseline->time_linear;
  if (!fitted) {
    v.note = "no analytic verdict: it needs the memory and time fits of both series";
  } else if (fit.budget_bytes <= baseline->memory->curve.fixed) {
    v.note = "no analytic verdict: the baseline's beta is above the budget";
  } else {
    // The analytic condition (Verdict::helps_analytic) multiplied through by (gamma' - gamma) and delta,
    // which keeps it defined where the strategy costs no time per sample.
    const double alpha = baseline->memory->curve.per_sample, beta = baseline->memory->curve.fixed;
    const double gamma = baseline->time_linear->curve.per_sample, delta = baseline->time_linear->curve.fixed;
    v.helps_analytic =
        delta * (alpha - fit.memory->curve.per_sample) > (fit.time_linear->curve.per_sample - gamma) * (fit.budget_bytes - beta);
  }
  return v;
}

}  // namespace

std::optional<double> SeriesFit::r2_time() const {
  if (time_max) return time_max->r2;
  if (time_linear) return time_linear->r2;
  return std::nullopt;
}

std::optional<SeriesFit::Ratio> SeriesFit::versus_baseline() const {
  if (!verdict) return Ratio{};
  const Verdict& v = *verdict;
  if (best_samples_per_s && v.baseline_best_samples_per_s && *v.baseline_best_samples_per_s > 0) {
    return Ratio{*best_samples_per_s / *v.baseline_best_samples_per_s, false};
  }
  if (!max_batch && best_measured_samples_per_s && v.baseline_best_measured_samples_per_s) {
    return Ratio{*best_measured_samples_per_s / *v.baseline_best_measured_samples_per_s, true};
  }
  return std::nullopt;
}

int SeriesFit::lowest_batch(int limit) const { return std::max(1, std::min(smallest_batch.value_or(1), limit)); }

std::vector<double> SeriesFit::rate_candidates(int limit) const {
  const double lowest = lowest_batch(limit);
  std::vector<double> candidates = {lowest, static_cast<double>(limit)};
  if (time_max && time_max->curve.per_sample > 0) {
    const double knee = time_max->curve.floor / time_max->curve.per_sample;
    for (const double b : {std::floor(knee), std::ceil(knee)}) {
      if (b > lowest && b < limit) candidates.push_back(b);
    }
  }
  return candidates;
}

double SeriesFit::iteration_s(double batch) const { return time_max ? time_max->curve.at(batch) : time_linear->curve.at(batch); }

GlobalModel fit_global(const Measurements& measurements, std::optional<double> budget_bytes) {
  GlobalModel model{measurements.source, budget_bytes, {}};
  for (const auto& series : measurements.series) {
    model.series.push_back(fit_series(series, budget_for(series, budget_bytes, measurements.source)));
  }
  for (auto& fit : model.series) {
    if (fit.strategy == kBaselineStrategy) continue;
    const auto baseline = std::find_if(model.series.begin(), model.series.end(), [&](const SeriesFit& s) {
      return s.gpu == fit.gpu && s.gpus == fit.gpus && s.network == fit.network && s.precision == fit.precision &&
             s.strategy == kBaselineStrategy;
    });
    fit.verdict = judge(fit, baseline == model.series.end() ? nullptr : &*baseline);
  }
  return model;
}

}  // namespace papaya::model
