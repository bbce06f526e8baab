#pragma once
// Predictions from a global model (papaya fit --measurements --out): per
// series, the peak and samples/s at a batch, the largest batch under a
// budget with samples/s there, and the verdict against the baseline. Each
// series is fitted again from the runs the model keeps, for the budget asked
// (the fit is deterministic: the same runs give the same curves), so that b*,
// the best batch and the verdict stay inside the data as fit_global's do.
#include <optional>
#include <string>
#include <vector>

#include "model/fit/global_fit.h"

namespace papaya::model {

struct SeriesPrediction {
  SeriesFit fit;                                  // fitted for the budget asked
  std::optional<double> peak_bytes;               // M(batch), where memory was fitted
  std::optional<double> samples_per_s;            // batch / T(batch), where time was fitted
  std::optional<double> max_batch_samples_per_s;  // at b*, where time was fitted and batch 1 fits
  std::optional<std::string> outside_runs;        // "batch 512 is outside the runs (264-424)"
};

struct GlobalPrediction {
  std::string source;                  // the measurements the model was fitted from
  std::optional<double> budget_bytes;  // asked; otherwise each series' GPU memory
  std::optional<int> batch;            // asked (limits asks none)
  std::vector<SeriesPrediction> series;
};

// `label` names the model file in errors. A model written before global
// models kept their runs cannot be fitted again: an InputError saying so.
GlobalPrediction predict_global(const GlobalModel& model, const std::string& label, std::optional<int> batch,
                                std::optional<double> budget_bytes);

}  // namespace papaya::model
