// papaya fit --measurements FILE.csv: PAPAYA's global model per series
// (model/global_fit.h), from runs measured anywhere.
#include <map>
#include <ostream>

#include "cli/fit_modes.h"
#include "cli/table.h"
#include "model/error.h"
#include "model/global_fit.h"
#include "model/global_model.h"
#include "model/json_file.h"
#include "model/measurements.h"
#include "model/units.h"

namespace papaya::cli {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

template <typename T, typename Format>
std::string cell(const std::optional<T>& value, Format format) {
  return value ? format(*value) : "-";
}

std::string yes_no(bool value) { return value ? "yes" : "no"; }

std::string helps_cell(const model::SeriesFit& fit) {
  if (!fit.verdict) return "baseline";
  const auto& v = *fit.verdict;
  std::string out = cell(v.helps, yes_no);
  if (v.helps_analytic && v.helps_analytic != v.helps) out += " (analytic: " + yes_no(*v.helps_analytic) + ")";
  return out;
}

void print_tables(std::ostream& out, const model::GlobalModel& fitted) {
  std::map<std::string, std::vector<const model::SeriesFit*>> by_gpu;
  for (const auto& fit : fitted.series) by_gpu[fit.gpu].push_back(&fit);
  const auto r2 = [](double v) { return fixed(v, 3); };
  for (const auto& [gpu, series] : by_gpu) {
    out << gpu << ", budget " << model::format_bytes(series.front()->budget_bytes) << "\n";
    Table table({"network", "precision", "strategy", "points", "alpha MiB/sample", "beta MiB", "gamma ms/sample", "delta ms",
                 "R² memory", "R² time", "max batch", "best samples/s", "helps"});
    for (const auto* fit : series) {
      const auto& memory = fit->memory;
      const auto& time = fit->time_linear;
      table.add_row({fit->network, fit->precision, fit->strategy, std::to_string(fit->points),
                     memory ? fixed(memory->curve.per_sample / kMiB, 2) : "-",
                     memory ? fixed(memory->curve.fixed / kMiB, 1) : "-", time ? fixed(time->curve.per_sample * 1e3, 3) : "-",
                     time ? fixed(time->curve.fixed * 1e3, 1) : "-", memory ? cell(memory->r2, r2) : "-",
                     cell(fit->r2_time(), r2),
                     fit->max_batch ? std::to_string(*fit->max_batch) + " (" + fit->max_batch_limit + ")" : "-",
                     cell(fit->best_samples_per_s, [](double v) { return fixed(v, 1); }), helps_cell(*fit)});
    }
    table.print(out);
    out << "\n";
  }
  out << "R² time: of max(a, k*b) + c where fitted (4 runs or more), else of gamma*b + delta.\n"
         "max batch: b* under the budget, set by the memory fit or by the smallest batch that ran out of memory.\n"
         "helps: a higher best samples/s at a batch <= b* than the 'none' series of the same precision;\n"
         "(analytic: ...) where DESIGN.md's condition on alpha, beta, gamma, delta disagrees.\n";
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

}  // namespace

MeasurementsFitResult fit_measurements_file(const FitOptions& options) {
  std::optional<double> budget;
  if (!options.budget.empty()) budget = static_cast<double>(model::parse_size(options.budget, "--budget"));
  MeasurementsFitResult result{model::fit_global(model::read_measurements(options.measurements), budget)};
  if (!options.out.empty()) model::write_json_file(options.out, model::to_json(result.fitted));
  return result;
}

void to_json(nlohmann::json& out, const MeasurementsFitResult& result) { out = model::to_json(result.fitted).at("series"); }

void print_text(std::ostream& out, const MeasurementsFitResult& result) { print_tables(out, result.fitted); }

}  // namespace papaya::cli
