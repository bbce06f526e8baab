#pragma once
// Many GPUs laid out for a transformer, as `plan` and `recommend` ask with
// --gpus N --gpus-per-node G: the links of the nodes and between them, the
// budget per GPU, the plans to weigh, and the search
// (model/layout_pricing/layout_search.h).
#include <optional>
#include <string>
#include <vector>

#include "model/layer_model.h"
#include "model/layout_pricing/layout_search.h"
#include "workflow/parallel_request.h"
#include "workflow/reporter.h"

namespace papaya::workflow {

// What every layout of a request shares: the network, the GPUs and their links.
struct LayoutSetting {
  std::string network, precision, hardware;
  model::ClusterLinks links;
  model::TransformerShape shape;
  std::vector<std::string> notes;  // what was assumed
};

struct LayoutPlanned {
  LayoutSetting setting;
  double budget_bytes = 0;
  int global_batch = 0;
  model::LayoutAnswer answer;
};

// Throws InputError: a hardware, link or layout that is not known or cannot
// be, a budget above the GPU's memory.
LayoutPlanned plan_layouts(const model::LayerModel& model, ParallelRequest request);

// The fewest GPUs, doubling from 1 to `most`, on which a layout of `request`
// fits its budget, with that layout's plan (each count at its default global
// batch); nullopt where none up to `most` does. Where that layout offloads
// the optimizer (the request leaving it open), also the fewest without
// (on_device). Counts no layout can split the network over are passed by;
// InputError for a network that is no transformer
// (model/parallel/tensor_split.h), or as plan_layouts. Reports each count
// it lays out, as a stage named by the hardware (a network of hundreds of
// experts takes minutes at the last).
struct FewestGpus {
  std::optional<LayoutPlanned> planned, on_device;
};
FewestGpus fewest_gpus_that_fit(const model::LayerModel& model, ParallelRequest request, Reporter& reporter, int most = 4096);

// One layout priced under each of `plans` (every whole-network plan of the
// target where empty), whatever its peak: `papaya predict` with a layout.
// The request's question is not used but for its plans.
struct LayoutPredicted {
  LayoutSetting setting;
  std::vector<model::LayoutEstimate> estimates;  // one a plan
};
LayoutPredicted predict_layout(const model::LayerModel& model, const ParallelRequest& request,
                               const model::ParallelLayout& layout, std::vector<std::string> plans);

}  // namespace papaya::workflow
