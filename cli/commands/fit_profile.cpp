// papaya fit PROFILE --out model.json: fits the per-layer performance model
// to a profile and reports how well it reproduces what was measured.
#include <ostream>

#include "cli/commands/fit_modes.h"
#include "cli/report/table.h"
#include "model/catalog/network_config.h"
#include "model/error.h"
#include "model/fit/sequence_scaling.h"
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

ProfileFitResult fit_profile_file(const FitOptions& options) {
  const size_t given = options.profiles.size();
  if (!options.seq_len) {
    if (given != 1) throw InputError("fit: one profile, or three with --seq-len N (" + std::to_string(given) + " given)");
    const std::string& path = options.profiles.front();
    ProfileFitResult result{path, options.out, model::fit_profile(model::read_profile(path), path)};
    model::write_layer_model(options.out, result.fit.model);
    return result;
  }
  const std::string what = "fit --seq-len " + std::to_string(*options.seq_len);
  if (given != 3) {
    throw InputError(what + ": give three profiles of the network at three sequence lengths (" + std::to_string(given) +
                     " given)");
  }
  std::vector<model::ModelAtLength> models;
  ProfileFitResult result{"", options.out, {}};
  nlohmann::json network;  // the profiles' network config, but for its length
  std::string lengths;
  int longest = 0;
  for (const std::string& path : options.profiles) {
    const model::Profile profile = model::read_profile(path);
    if (!profile.network_config.contains("seq_len")) {
      throw InputError(path + ": " + what + ": a " + profile.network_config.value("family", std::string("?")) +
                       " network has no token sequence");
    }
    nlohmann::json config = profile.network_config;
    const int length = config.at("seq_len").get<int>();
    config.erase("seq_len");
    if (network.is_null()) network = config;
    if (config != network) throw InputError(path + ": a profile of another network than " + options.profiles.front());
    model::ProfileFit fit = model::fit_profile(profile, path);
    lengths += (lengths.empty() ? "" : ", ") + std::to_string(length);
    models.push_back({length, fit.model});
    if (length > longest) {  // its fit tells the quality; the target must fit its position table
      longest = length;
      result.profile = path;
      result.fit = std::move(fit);
      model::at_seq_len(model::parse_network_config(profile.network_config, path + ": network_config"), *options.seq_len);
    }
  }
  result.fit.model = model::at_sequence_length(models, *options.seq_len, what);
  result.fit.quality.notes.push_back("modelled at " + std::to_string(*options.seq_len) + " tokens from profiles at " + lengths +
                                     " (bytes: quadratic in the tokens; times: the longest profile's, scaled with each "
                                     "layer's FLOPs); the fit's quality above is the longest profile's");
  model::write_layer_model(options.out, result.fit.model);
  return result;
}

void to_json(nlohmann::json& out, const ProfileFitResult& result) {
  const model::LayerModel& m = result.fit.model;
  const model::FitQuality& q = result.fit.quality;
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : q.steps) steps.push_back(step_json(s));
  out = {{"model", result.out},
         {"profile", result.profile},
         {"network", m.network},
         {"device", m.machine.device},
         {"device_name", m.machine.device_name},
         {"precision", m.precision},
         {"batches", m.batches},
         {"time", summary_json(q.time)},
         {"memory", summary_json(q.memory)},
         {"steps", steps},
         {"holdout", q.holdout ? step_json(*q.holdout) : nlohmann::json()},
         {"notes", q.notes}};
}

void print_text(std::ostream& out, const ProfileFitResult& result) {
  const model::LayerModel& m = result.fit.model;
  const model::FitQuality& q = result.fit.quality;
  std::string batches;
  for (int b : m.batches) batches += (batches.empty() ? "" : ",") + std::to_string(b);
  out << "papaya fit: " << m.network << " on " << m.machine.device << " ("
      << (m.machine.device_name.empty() ? "?" : m.machine.device_name) << "), " << m.precision << ", batches " << batches
      << " -> " << result.out << "\n\n";
  Table curves({"per-layer fit", "points", "R^2", "median |error|", "worst |error|", "worst at"});
  add_summary(curves, "time (max(a, k*b) + c)", q.time);
  add_summary(curves, "memory (alpha*b + beta)", q.memory);
  curves.print(out);
  out << "\n";
  Table steps(
      {"training step (keep)", "batch", "measured ms", "predicted ms", "error", "measured peak", "predicted peak", "error"});
  for (const auto& s : q.steps) add_step(steps, "fitted", s);
  if (q.holdout) add_step(steps, "held out (fitted without it)", *q.holdout);
  steps.print(out);
  for (const auto& note : q.notes) out << "note: " << note << "\n";
}

}  // namespace papaya::cli
