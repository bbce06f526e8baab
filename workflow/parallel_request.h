#pragma once
// The GPUs plan, recommend, predict and limits are asked about, in one
// vocabulary: how many and their ZeRO stage, the links within a node and
// between nodes, and which degrees of their layout (model/parallel/parallel_layout.h)
// are fixed and which the search chooses (model/layout_pricing/layout_search.h).
// Data parallelism alone is the layout with every other degree 1: its ranks
// each run the whole network, planned layer by layer (planner/); any other
// layout splits a transformer and weighs whole-network plans a stage.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "model/catalog/hardware.h"
#include "model/catalog/target.h"
#include "model/layer_model.h"
#include "model/layout_pricing/layout_search.h"
#include "model/parallel/engines.h"
#include "model/parallel/parallel_layout.h"

namespace papaya::workflow {

struct ParallelRequest {
  std::string hardware;                          // a catalog entry (the GPUs); "": the profiled machine
  std::string intra_node_link;                   // a catalog link or a measured link's file; "": the hardware's interconnect
  std::string inter_node_link;                   // "": InfiniBand of the hardware's generation (inter_node_default)
  std::optional<int> gpus_per_node;              // nullopt: 8
  std::optional<double> compute_efficiency;      // model::catalog_target's
  std::optional<double> budget_bytes;            // per GPU; default: 80% of the hardware's memory
  model::LayoutQuestion question;                // the GPUs, the ZeRO stage, each degree fixed or not
  model::Engine engine = model::Engine::papaya;  // that runs the layout (Megatron-LM for its arguments)
  bool engine_arguments = false;                 // the answer wanted as the engine's arguments
  bool overlap_grad_reduce = true;               // model::LayoutRequest's
  size_t keep = 5;                               // layouts answered

  int gpus() const { return question.gpus; }
  // Whether the question is data parallelism alone, as a plan per layer
  // answers it: tensor, pipeline, virtual, context and expert degrees fixed
  // at 1, one micro-batch a step (none and no global batch fixed), the
  // optimizer on the GPUs, gradients reduced behind backward, no compute
  // efficiency (a layout's carrying of a profile), no engine's arguments
  // and no whole-network plans to weigh.
  bool data_parallel_only() const;
  // The GPUs as data-parallel ranks at `zero_stage`.
  model::ParallelLayout data_parallel_layout(int zero_stage) const;
  // Before any long work: InputError for what the layout's check refuses
  // (model::check_layout: a ZeRO stage above 0 on one GPU), a link with
  // fewer than two GPUs, or a link that is neither in the catalog nor a file.
  void validate() const;
  // InputError where two or more GPUs on `where` (a CPU, a GPU outside the
  // catalog) have no interconnect known and no link is named.
  void require_link(const std::string& where) const;
  // The link within a node of `hardware` (its catalog entry; none: not in
  // the catalog): the one named, else its interconnect; "" where neither is.
  std::string link_within_node(const std::optional<model::HardwareSpec>& hardware) const;
  // The link between nodes beside `within` (link_within_node's): the one
  // named, else InfiniBand of its generation (inter_node_default).
  std::string link_between_nodes(const std::string& within) const;
  // The ZeRO stages a per-layer plan weighs: the one asked for, else 0, or
  // all four where the planner chooses (two or more GPUs).
  std::vector<int> zero_stages(bool planner_chooses) const;
};

// InfiniBand-HDR beside NVLink-3 (A100 systems), else InfiniBand-NDR.
std::string inter_node_default(const std::string& interconnect);
// The note of a link between nodes assumed: "between nodes: NAME assumed ...".
std::string inter_node_assumed(const std::string& link);

// `target` as the request's GPUs, data-parallel ranks at `zero_stage`, over
// the link their group spans, as a layout's data-parallel group exchanges
// (model/layout_pricing/layout_pricer.h): within a node (up to the request's
// GPUs a node, 8 unless given) its link within a node, else the
// interconnect of `target`'s catalog entry (InputError where it has none:
// require_link); across nodes the link between nodes (a note says where it
// is assumed). One GPU: `target` unchanged.
void apply_data_parallel(model::Target& target, const model::LayerModel& model, const ParallelRequest& request, int zero_stage);

}  // namespace papaya::workflow
