#include "model/fit/global_predict.h"

#include <algorithm>

#include "model/error.h"

namespace papaya::model {
namespace {

std::optional<double> rate_at(const SeriesFit& fit, int batch) {
  if (!fit.time_linear || batch < 1) return std::nullopt;
  const double seconds = fit.iteration_s(batch);
  if (seconds <= 0) return std::nullopt;
  return batch / seconds;
}

// Where `batch` lies beyond the batches that ran, the figures at it are the
// curves' alone.
std::optional<std::string> outside_runs(const MeasuredSeries& series, int batch) {
  std::optional<int> lowest, highest;
  for (const auto& run : series.runs) {
    if (run.oom) continue;
    lowest = std::min(lowest.value_or(run.batch), run.batch);
    highest = std::max(highest.value_or(run.batch), run.batch);
  }
  if (!lowest || (batch >= *lowest && batch <= *highest)) return std::nullopt;
  return "batch " + std::to_string(batch) + " is outside the runs (" + std::to_string(*lowest) + "-" + std::to_string(*highest) +
         "): the curves extrapolated";
}

}  // namespace

GlobalPrediction predict_global(const GlobalModel& model, const std::string& label, std::optional<int> batch,
                                std::optional<double> budget_bytes) {
  Measurements runs{model.source, {}};
  for (size_t i = 0; i < model.series.size(); ++i) {
    if (!model.series[i].measured) {
      throw InputError(label + ": /series/" + std::to_string(i) +
                       "/measured: absent: this model was written before papaya kept the runs of a series; fit its "
                       "measurements again");
    }
    runs.series.push_back(*model.series[i].measured);
  }
  GlobalPrediction out{model.source, budget_bytes, batch, {}};
  for (SeriesFit& fit : fit_global(runs, budget_bytes).series) {
    SeriesPrediction p;
    if (batch) {
      if (fit.memory) p.peak_bytes = fit.memory->curve.at(*batch);
      p.samples_per_s = rate_at(fit, *batch);
      p.outside_runs = outside_runs(*fit.measured, *batch);
    }
    if (fit.max_batch) p.max_batch_samples_per_s = rate_at(fit, *fit.max_batch);
    p.fit = std::move(fit);
    out.series.push_back(std::move(p));
  }
  return out;
}

}  // namespace papaya::model
