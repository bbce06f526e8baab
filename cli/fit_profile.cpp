// papaya fit PROFILE --out model.json: fits the per-layer performance model
// to a profile and reports how well it reproduces what was measured.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/fit_modes.h"
#include "cli/table.h"
#include "model/fit_profile.h"
#include "model/units.h"

namespace papaya::cli {
namespace {

std::string percent(double fraction) { return fixed(100 * fraction, 1) + "%"; }

std::string signed_percent(double predicted, double measured) {
  const double error = measured != 0 ? (predicted - measured) / measured : 0;
  return (error >= 0 ? "+" : "") + fixed(100 * error, 1) + "%";
}

nlohmann::json summary_json(const model::FitSummary& s) {
  return {
      {"points", s.points},
      {"r_squared", s.r_squared},
      {"median_relative_error", s.median_relative},
      {"worst",
       {{"layer", s.worst_layer}, {"figure", s.worst_figure}, {"batch", s.worst_batch}, {"relative_error", s.worst_relative}}}};
}

nlohmann::json step_json(const model::StepCheck& s) {
  return {{"batch", s.batch},
          {"measured_seconds", s.measured_seconds},
          {"predicted_seconds", s.predicted_seconds},
          {"measured_peak_bytes", s.measured_peak_bytes},
          {"predicted_peak_bytes", s.predicted_peak_bytes}};
}

void add_summary(Table& table, const std::string& what, const model::FitSummary& s) {
  table.add_row({what, std::to_string(s.points), fixed(s.r_squared, 4), percent(s.median_relative), percent(s.worst_relative),
                 s.worst_layer + " " + s.worst_figure + " at batch " + std::to_string(s.worst_batch)});
}

void add_step(Table& table, const std::string& label, const model::StepCheck& s) {
  table.add_row({label, std::to_string(s.batch), fixed(s.measured_seconds * 1e3, 2), fixed(s.predicted_seconds * 1e3, 2),
                 signed_percent(s.predicted_seconds, s.measured_seconds), model::format_bytes(s.measured_peak_bytes),
                 model::format_bytes(s.predicted_peak_bytes), signed_percent(s.predicted_peak_bytes, s.measured_peak_bytes)});
}

}  // namespace

void run_profile_fit(const FitOptions& options) {
  const std::string& profile_path = options.profile;
  const std::string& out_path = options.out;
  const bool json = options.json;
  const model::Profile profile = model::read_profile(profile_path);
  const model::ProfileFit fit = model::fit_profile(profile, profile_path);
  model::write_layer_model(out_path, fit.model);
  const model::FitQuality& q = fit.quality;

  if (json) {
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& s : q.steps) steps.push_back(step_json(s));
    const nlohmann::json out = {{"model", out_path},
                                {"profile", profile_path},
                                {"network", fit.model.network},
                                {"device", fit.model.machine.device},
                                {"device_name", fit.model.machine.device_name},
                                {"precision", fit.model.precision},
                                {"batches", fit.model.batches},
                                {"time", summary_json(q.time)},
                                {"memory", summary_json(q.memory)},
                                {"steps", steps},
                                {"holdout", q.holdout ? step_json(*q.holdout) : nlohmann::json()},
                                {"notes", q.notes}};
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::string batches;
  for (int b : fit.model.batches) batches += (batches.empty() ? "" : ",") + std::to_string(b);
  std::cout << "papaya fit: " << fit.model.network << " on " << fit.model.machine.device << " ("
            << (fit.model.machine.device_name.empty() ? "?" : fit.model.machine.device_name) << "), " << fit.model.precision
            << ", batches " << batches << " -> " << out_path << "\n\n";
  Table curves({"per-layer fit", "points", "R^2", "median |error|", "worst |error|", "worst at"});
  add_summary(curves, "time (max(a, k*b) + c)", q.time);
  add_summary(curves, "memory (alpha*b + beta)", q.memory);
  curves.print(std::cout);
  std::cout << "\n";
  Table steps(
      {"training step (keep)", "batch", "measured ms", "predicted ms", "error", "measured peak", "predicted peak", "error"});
  for (const auto& s : q.steps) add_step(steps, "fitted", s);
  if (q.holdout) add_step(steps, "held out (fitted without it)", *q.holdout);
  steps.print(std::cout);
  for (const auto& note : q.notes) std::cout << "note: " << note << "\n";
}

}  // namespace papaya::cli
