#include "cli/report/prediction_plot.h"

#include <algorithm>
#include <cmath>

#include "model/plan_space/plan_space.h"
#include "model/units.h"

namespace papaya::cli {

std::vector<int64_t> plot_batches(int64_t top) {
  constexpr int steps = 48;
  const double most = static_cast<double>(std::max<int64_t>(top, 1));
  std::vector<int64_t> batches;
  for (int i = 0; i <= steps; ++i) batches.push_back(std::llround(std::pow(most, i / double(steps))));
  batches.erase(std::unique(batches.begin(), batches.end()), batches.end());
  return batches;
}

PredictionPanels prediction_panels(const model::LayerModel& model, const model::Target& target,
                                   const std::vector<std::pair<std::string, model::Plan>>& plans, int64_t top,
                                   std::optional<double> budget_bytes) {
  const std::vector<int64_t> batches = plot_batches(top);
  const model::PlanSpace space(model, target, 1);
  std::vector<model::PlanSpace> spaces;
  for (int64_t b : batches) spaces.push_back(space.at_batch(b));
  // Bytes first; the unit is chosen once the largest figure is known.
  PredictionPanels out;
  double largest = budget_bytes.value_or(0);
  for (const auto& [name, plan] : plans) {
    const model::Assignment assignment = space.assignment(plan);
    PlotSeries memory{name, {}, {}}, rate{name, {}, {}};
    for (size_t i = 0; i < batches.size(); ++i) {
      const model::Estimate e = spaces[i].evaluate(assignment);
      const double b = static_cast<double>(batches[i]);
      memory.curve.push_back({b, e.peak_bytes});
      largest = std::max(largest, e.peak_bytes);
      if (!budget_bytes || e.peak_bytes <= *budget_bytes) rate.curve.push_back({b, e.samples_per_s});
    }
    out.memory.series.push_back(std::move(memory));
    out.throughput.series.push_back(std::move(rate));
  }
  const bool gib = largest >= double(int64_t{1} << 30);
  out.bytes_per_unit = gib ? double(int64_t{1} << 30) : double(int64_t{1} << 20);
  for (auto& series : out.memory.series) {
    for (auto& point : series.curve) point.second /= out.bytes_per_unit;
  }
  out.memory.title = "peak memory";
  out.memory.y_label = gib ? "GiB" : "MiB";
  if (budget_bytes) {
    out.memory.hline = *budget_bytes / out.bytes_per_unit;
    out.memory.hline_label = "budget " + model::format_bytes(*budget_bytes);
  }
  out.throughput.title = budget_bytes ? "throughput (where it fits)" : "throughput";
  out.throughput.y_label = "samples/s";
  return out;
}

}  // namespace papaya::cli
