#pragma once
// Fitting a layer model (layer_model.h) to a profile: per layer, its memory
// figures alpha*b + beta (least squares: exact on a CPU) and its forward and
// backward times max(a, k*b) + c (Ceres, robust); per segment its recompute
// time; the optimizer step and the rest of the iteration (iteration - layers
// - optimizer); the calibration of the step peak; and, on a catalog GPU, the
// roofline efficiencies that carry times to other hardware. Batch sizes the
// profile ran out of memory at are left out.
#include <optional>
#include <string>
#include <vector>

#include "model/layer_model.h"
#include "model/profile.h"

namespace papaya::model {

// How well the curves reproduce what they were fitted to.
struct FitSummary {
  int points = 0;
  double r_squared = 1;
  double median_relative = 0;  // median |predicted - measured| / measured
  // The worst point: which layer, which figure, at which batch.
  std::string worst_layer, worst_figure;
  int worst_batch = 0;
  double worst_relative = 0;
};

// The keep step at one batch size, predicted by the fitted model.
struct StepCheck {
  int batch = 0;
  double measured_seconds = 0, predicted_seconds = 0;
  double measured_peak_bytes = 0, predicted_peak_bytes = 0;
};

// Holdout errors beyond which the fit warns that extrapolating is uncertain
// (per-sample time that grows with the batch, as CPU caches overflow, shows
// up here first).
constexpr double holdout_time_warning = 0.05;
constexpr double holdout_peak_warning = 0.02;

struct FitQuality {
  FitSummary time;               // per-layer forward and backward seconds
  FitSummary memory;             // per-layer allocator figures
  std::vector<StepCheck> steps;  // each profiled batch size
  // Fitted without the largest batch size, predicting it (three or more sizes).
  std::optional<StepCheck> holdout;
  std::vector<std::string> notes;  // what the fit or its predictions assume
};

struct ProfileFit {
  LayerModel model;
  FitQuality quality;
};

// `label` names the profile in errors (its file). Throws InputError for a
// profile with fewer than two usable batch sizes or a fit that does not converge.
ProfileFit fit_profile(const Profile& profile, const std::string& label);

}  // namespace papaya::model
