#include "cli/report/global_prediction.h"

#include <map>

#include "cli/report/series_cells.h"
#include "cli/report/table.h"
#include "model/units.h"

namespace papaya::cli {
namespace {

template <typename T>
nlohmann::json or_null(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json();
}

std::string batch_cell(const model::SeriesFit& fit, const std::optional<double>& rate) {
  if (!fit.max_batch) return "-";
  return std::to_string(*fit.max_batch) + " (" + fit.max_batch_limit + ")" + (rate ? ", " + per_second(*rate) + "/s" : "");
}

}  // namespace

void to_json(nlohmann::json& out, const GlobalPredictionReport& report) {
  const model::GlobalPrediction& p = report.prediction;
  out = nlohmann::json::array();
  for (const auto& s : p.series) {
    const model::SeriesFit& fit = s.fit;
    const auto ratio = fit.verdict ? fit.versus_baseline() : std::optional<model::SeriesFit::Ratio>{model::SeriesFit::Ratio{}};
    nlohmann::json row = {
        {"gpu", fit.gpu},
        {"gpus", fit.gpus},
        {"network", fit.network},
        {"precision", fit.precision},
        {"strategy", fit.strategy},
        {"budget_bytes", fit.budget_bytes},
        {"max_batch", or_null(fit.max_batch)},
        {"max_batch_limit", fit.max_batch_limit.empty() ? nlohmann::json() : nlohmann::json(fit.max_batch_limit)},
        {"max_batch_samples_per_s", or_null(s.max_batch_samples_per_s)},
        {"best_batch", or_null(fit.best_batch)},
        {"best_samples_per_s", or_null(fit.best_samples_per_s)},
        {"versus_baseline", ratio ? nlohmann::json(ratio->value) : nlohmann::json()},
        {"helps", fit.verdict ? or_null(fit.verdict->helps) : nlohmann::json()},
        {"notes", fit.notes}};
    if (p.batch) {
      row["batch"] = *p.batch;
      row["peak_bytes"] = or_null(s.peak_bytes);
      row["samples_per_s"] = or_null(s.samples_per_s);
      if (s.outside_runs) row["notes"].push_back(*s.outside_runs);
    }
    if (fit.verdict && !fit.verdict->note.empty()) row["notes"].push_back(fit.verdict->note);
    out.push_back(row);
  }
}

void print_text(std::ostream& out, const GlobalPredictionReport& report) {
  const model::GlobalPrediction& p = report.prediction;
  out << "papaya " << report.command << ": global model " << report.model << " (fitted from " << p.source << ")"
      << (p.batch ? ", batch " + std::to_string(*p.batch) : "") << ", budget "
      << (p.budget_bytes ? model::format_bytes(*p.budget_bytes) : "each GPU's memory") << "\n";
  std::map<std::pair<std::string, int>, std::vector<const model::SeriesPrediction*>> by_gpu;
  for (const auto& s : p.series) by_gpu[{s.fit.gpu, s.fit.gpus}].push_back(&s);
  const std::string at = p.batch ? " at " + std::to_string(*p.batch) : "";
  for (const auto& [gpu, series] : by_gpu) {
    out << "\n"
        << gpu.first << (gpu.second > 1 ? " x " + std::to_string(gpu.second) + " (data parallel; batch per GPU)" : "")
        << ", budget " << model::format_bytes(series.front()->fit.budget_bytes) << "\n";
    std::vector<std::string> header = {"network", "precision", "strategy"};
    if (p.batch) header.insert(header.end(), {"peak" + at, "samples/s" + at});
    header.insert(header.end(), {"largest batch", "best samples/s (batch)", "vs none", "helps"});
    Table table(header);
    for (const auto* s : series) {
      const model::SeriesFit& fit = s->fit;
      std::vector<std::string> row = {fit.network, fit.precision, fit.strategy};
      if (p.batch) {
        row.push_back(cell(s->peak_bytes, [](double v) { return model::format_bytes(v); }));
        row.push_back(cell(s->samples_per_s, [](double v) { return per_second(v); }));
      }
      row.push_back(batch_cell(fit, s->max_batch_samples_per_s));
      row.push_back(fit.best_samples_per_s ? per_second(*fit.best_samples_per_s) + " (" + std::to_string(*fit.best_batch) + ")"
                                           : "-");
      row.push_back(versus_baseline_cell(fit));
      row.push_back(helps_cell(fit));
      table.add_row(row);
    }
    table.print(out);
  }
  out << "\nlargest batch: b* under the budget (set by the memory fit or the smallest batch that ran out of memory), "
         "samples/s there; best: the time model's, from the smallest batch that ran up to b*; helps: a higher best than "
         "the 'none' series of the same GPUs, network and precision (- undecided).\n";
  bool header = false;
  for (const auto& s : p.series) {
    std::vector<std::string> notes = s.fit.notes;
    if (s.outside_runs) notes.push_back(*s.outside_runs);
    if (s.fit.verdict && !s.fit.verdict->note.empty()) notes.push_back(s.fit.verdict->note);
    for (const auto& note : notes) {
      if (!header) out << "\nNotes:\n", header = true;
      out << "  " << s.fit.gpu << " " << s.fit.network << " " << s.fit.precision << " " << s.fit.strategy << ": " << note << "\n";
    }
  }
}

}  // namespace papaya::cli
