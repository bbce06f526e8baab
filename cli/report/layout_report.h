#pragma once
// What plan, recommend, predict and limits show of a layout of many GPUs:
// the best layouts, the best one's stages, and the arguments of the engine
// `emit` names ("megatron", "torchtitan", "papaya"; "": none).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli/report/report.h"
#include "model/layer_model.h"
#include "model/parallel/parallel_layout.h"
#include "workflow/layout_plan.h"

namespace papaya::cli {

// Plans the layouts of `model` and shows them (tables, --json, or the
// engine's arguments; `model_path`: where the model was written, said at
// the end). Throws InputError where none fits the budget.
void show_layouts(const model::LayerModel& model, const std::string& emit, const workflow::ParallelRequest& request,
                  const Output& output, const std::string& model_path = "");

// limits' --tokens and --price: what training on `tokens` takes on each
// hardware's best layout, and costs where its GPU-hour has a price.
struct TrainingQuestion {
  std::optional<double> tokens;
  std::map<std::string, double> usd_per_gpu_hour;  // by catalog name
};

// limits with a layout: the best layout of the GPUs on each catalog entry
// of `hardware` (`request`'s hardware ignored), or what the nearest needs
// where none fits; with `training`, the time and cost of its tokens on each,
// the fastest and the cheapest named; `html` ("": none) the same as a page.
// InputError where `emit` names an engine (its arguments are of one layout).
void show_layout_limits(const model::LayerModel& model, const std::string& emit, workflow::ParallelRequest request,
                        const std::vector<std::string>& hardware, const TrainingQuestion& training, const std::string& html,
                        const Output& output);

// predict with a layout: the layout under each plan (`plan`, or every
// whole-network plan), whatever its peak, and its stages under the first.
void show_layout_prediction(const model::LayerModel& model, const std::string& emit, const workflow::ParallelRequest& request,
                            const model::ParallelLayout& layout, const std::string& plan, const Output& output);

}  // namespace papaya::cli
