#pragma once
// N data-parallel GPUs as a prediction or a plan asks for them: every figure
// per GPU (model/parallel/data_parallel.h), their samples/s together, the
// gradient exchange priced on a link.
#include <optional>
#include <string>
#include <vector>

#include "model/catalog/target.h"
#include "model/layer_model.h"
#include "model/parallel/parallel_layout.h"

namespace papaya::workflow {

struct DataParallelRequest {
  int gpus = 1;
  std::optional<int> zero;  // the ZeRO stage; nullopt: 0, or where the planner chooses, its choice
  std::string link;         // a catalog link or a measured link's file; "": the hardware's interconnect

  // Whether any of it was asked for (more GPUs, a stage, a link).
  bool requested() const { return gpus != 1 || zero.has_value() || !link.empty(); }
  // The GPUs as a layout: data parallelism alone, at `zero_stage`.
  model::ParallelLayout layout(int zero_stage) const;
  // Before any long work: InputError for what the layout's check refuses
  // (model::check_layout: a ZeRO stage above 0 on one GPU), a link with
  // fewer than two GPUs, or a link that is neither in the catalog nor a file.
  void validate() const;
  // InputError where two or more GPUs on `where` (a CPU, a GPU outside the
  // catalog) have no interconnect known and no link is named.
  void require_link(const std::string& where) const;
  // The stages to consider: the one asked for, else 0, or all four where
  // the planner chooses (two or more GPUs).
  std::vector<int> stages(bool planner_chooses) const;
};

// `target` as request.gpus ranks at `zero_stage` over the request's link,
// else over the interconnect of `target`'s catalog entry (InputError where
// it has none: require_link). One GPU: `target` unchanged.
void apply_data_parallel(model::Target& target, const model::LayerModel& model, const DataParallelRequest& request,
                         int zero_stage);

}  // namespace papaya::workflow
