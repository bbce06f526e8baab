#pragma once
// The figure of the PAPAYA paper from a layer model: predicted peak memory and
// samples/s against the batch, a curve per plan, the budget as a line. `papaya
// plan`, `predict` and `validate` draw it (validate adds its measurements as
// points); cli/report/plot.h draws the panels.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/report/plot.h"
#include "model/catalog/target.h"
#include "model/layer_model.h"
#include "model/plan.h"

namespace papaya::cli {

// Batches from 1 to `top` spaced evenly on the plot's logarithmic axis:
// dense enough that a curve looks like one.
std::vector<int64_t> plot_batches(int64_t top);

// The two panels, a series per plan in the order given (named by its first),
// predicted at plot_batches(top). With a budget, it is drawn on the memory
// panel and samples/s only where the peak is within it.
struct PredictionPanels {
  PlotPanel memory;           // in `bytes_per_unit` units
  PlotPanel throughput;       // samples/s
  double bytes_per_unit = 1;  // MiB or GiB, whichever suits the largest figure
};
PredictionPanels prediction_panels(const model::LayerModel& model, const model::Target& target,
                                   const std::vector<std::pair<std::string, model::Plan>>& plans, int64_t top,
                                   std::optional<double> budget_bytes);

}  // namespace papaya::cli
