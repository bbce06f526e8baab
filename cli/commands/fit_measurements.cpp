// papaya fit --measurements FILE.csv: PAPAYA's global model per series
// (model/fit/global_fit.h), from runs measured anywhere.
#include <map>
#include <ostream>

#include "cli/commands/fit_modes.h"
#include "cli/report/series_cells.h"
#include "cli/report/table.h"
#include "model/catalog/link_catalog.h"
#include "model/error.h"
#include "model/fit/global_fit.h"
#include "model/fit/global_model.h"
#include "model/fit/measurements.h"
#include "model/json_file.h"
#include "model/units.h"

namespace papaya::cli {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

void print_tables(std::ostream& out, const model::GlobalModel& fitted) {
  std::map<std::pair<std::string, int>, std::vector<const model::SeriesFit*>> by_gpu;
  for (const auto& fit : fitted.series) by_gpu[{fit.gpu, fit.gpus}].push_back(&fit);
  const auto r2 = [](double v) { return fixed(v, 3); };
  for (const auto& [gpu, series] : by_gpu) {
    out << gpu.first << (gpu.second > 1 ? " x " + std::to_string(gpu.second) + " (data parallel; batch per GPU)" : "")
        << ", budget " << model::format_bytes(series.front()->budget_bytes) << "\n";
    Table table({"network", "precision", "strategy", "points", "alpha MiB/sample", "beta MiB", "gamma ms/sample", "delta ms",
                 "R² memory", "R² time", "max batch", "best samples/s", "vs none", "helps"});
    for (const auto* fit : series) {
      const auto& memory = fit->memory;
      const auto& time = fit->time_linear;
      table.add_row(
          {fit->network, fit->precision, fit->strategy, std::to_string(fit->points),
           memory ? fixed(memory->curve.per_sample / kMiB, 2) : "-", memory ? fixed(memory->curve.fixed / kMiB, 1) : "-",
           time ? fixed(time->curve.per_sample * 1e3, 3) : "-", time ? fixed(time->curve.fixed * 1e3, 1) : "-",
           memory ? cell(memory->r2, r2) : "-", cell(fit->r2_time(), r2),
           fit->max_batch ? std::to_string(*fit->max_batch) + " (" + fit->max_batch_limit + ")" : "-",
           cell(fit->best_samples_per_s, [](double v) { return fixed(v, 1); }), versus_baseline_cell(*fit), helps_cell(*fit)});
    }
    table.print(out);
    out << "\n";
  }
  out << "R² time: of max(a, k*b) + c where fitted (4 runs or more), else of gamma*b + delta.\n"
         "vs none: best samples/s over the 'none' series' of the same GPUs, network and precision; (runs): of the best "
         "runs, where no peak or OOM row gives a largest batch.\n"
         "max batch: b* under the budget, set by the memory fit or by the smallest batch that ran out of memory.\n"
         "best samples/s: the time model's, at a batch from the smallest that ran up to b* (a negative delta is refitted "
         "to 0: see the notes).\n"
         "helps: a higher best samples/s than the 'none' series of the same precision; undecided (-) where either "
         "ran at one batch only and neither has a b*;\n"
         "(analytic: ...) where PAPAYA's condition (alpha - alpha')/(gamma' - gamma) > (M - beta)/delta disagrees.\n";
  bool header = false;
  for (const auto& fit : fitted.series) {
    std::vector<std::string> notes = fit.notes;
    if (fit.verdict && !fit.verdict->note.empty()) notes.push_back(fit.verdict->note);
    for (const auto& note : notes) {
      if (!header) out << "\nNotes:\n", header = true;
      out << "  " << fit.network << " " << fit.precision << " " << fit.strategy << ": " << note << "\n";
    }
  }
}

// --gradients NET=SIZE,...: each network's gradient bytes.
std::map<std::string, double> gradient_bytes(const std::vector<std::string>& items) {
  std::map<std::string, double> out;
  for (const auto& item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("--gradients " + item + ": expected NETWORK=SIZE (bert-large-cased=1.34GB)");
    out[item.substr(0, eq)] = static_cast<double>(model::parse_size(item.substr(eq + 1), "--gradients " + item));
  }
  return out;
}

void print_on_gpus(std::ostream& out, const MeasurementsFitResult& result) {
  out << "\nPredicted on more GPUs from the one-GPU fits, over " << result.link
      << " (each GPU at its batch; the gradients allreduced in buckets behind backward; batch per GPU, samples/s of all):\n";
  Table table(
      {"network", "precision", "strategy", "gpus", "max batch", "best batch", "best samples/s", "vs none", "measured vs none"});
  for (const auto& s : result.on_gpus) {
    const auto ratio = [](double v) { return fixed(v, 2) + "x"; };
    table.add_row({s.network, s.precision, s.strategy, std::to_string(s.gpus),
                   cell(s.max_batch, [](int b) { return std::to_string(b); }),
                   cell(s.best_batch, [](int b) { return std::to_string(b); }),
                   cell(s.best_samples_per_s, [](double v) { return fixed(v, 1); }), cell(s.versus_baseline, ratio),
                   cell(s.measured_versus_baseline, ratio)});
  }
  table.print(out);
}

}  // namespace

MeasurementsFitResult fit_measurements_file(const FitOptions& options) {
  std::optional<double> budget;
  if (!options.budget.empty()) budget = static_cast<double>(model::parse_size(options.budget, "--budget"));
  if (options.gpus.empty() != options.link.empty() || options.gpus.empty() != options.gradients.empty()) {
    throw InputError(
        "fit --measurements: --gpus, --link and --gradients go together (the counts, the link, each network's gradient bytes)");
  }
  const auto gradients = gradient_bytes(options.gradients);
  std::optional<model::LinkSpec> link;
  if (!options.link.empty()) link = model::load_link(options.link);
  MeasurementsFitResult result{model::fit_global(model::read_measurements(options.measurements), budget), "", {}};
  if (link) {
    result.link = link->name;
    result.on_gpus = model::scale_to_gpus(result.fitted, gradients, link->fit, options.gpus);
  }
  if (!options.out.empty()) model::write_json_file(options.out, model::to_json(result.fitted));
  return result;
}

void to_json(nlohmann::json& out, const MeasurementsFitResult& result) {
  out = model::to_json(result.fitted).at("series");
  if (result.link.empty()) return;
  const auto or_null = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  nlohmann::json scaled = nlohmann::json::array();
  for (const auto& s : result.on_gpus) {
    scaled.push_back({{"network", s.network},
                      {"precision", s.precision},
                      {"strategy", s.strategy},
                      {"gpus", s.gpus},
                      {"max_batch", or_null(s.max_batch)},
                      {"best_batch", or_null(s.best_batch)},
                      {"best_samples_per_s", or_null(s.best_samples_per_s)},
                      {"versus_none", or_null(s.versus_baseline)},
                      {"measured_versus_none", or_null(s.measured_versus_baseline)},
                      {"note", s.note}});
  }
  out = {{"series", out}, {"link", result.link}, {"on_gpus", scaled}};
}

void print_text(std::ostream& out, const MeasurementsFitResult& result) {
  print_tables(out, result.fitted);
  if (!result.link.empty()) print_on_gpus(out, result);
}

}  // namespace papaya::cli
