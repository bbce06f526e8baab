#pragma once
// The GPUs of plan, recommend, predict and limits, in one set of options read
// into one workflow::ParallelRequest: --gpus N [--zero S] [--link NAME]
// [--inter-node-link NAME] alone asks for data-parallel ranks (each degree
// but data 1); --gpus-per-node G or any degree or layout choice (--tp, --pp,
// --vp, --cp, --ep, --sp, --offload-optimizer, --micro-batch, ...) lays a
// transformer out, each degree chosen unless fixed, at --global-batch; the
// best layouts as a table, as JSON, or (--emit) as the arguments of the
// engines that run them.
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/parallel/parallel_layout.h"
#include "workflow/parallel_request.h"

namespace papaya::cli {

struct ParallelOptions {
  int gpus = 1;
  std::optional<int> zero;  // the ZeRO stage; nullopt: 0, or where the command chooses, its choice
  std::string link;         // within a node; "": the hardware's interconnect
  int gpus_per_node = 0;    // 0: not asked for
  std::optional<int> tensor, pipeline, virtual_stages, context, expert, micro_batch, global_batch;
  std::string sequence, offload;    // "on", "off", "": chosen
  std::string overlap_grad_reduce;  // "on", "off", "": on
  std::string inter_node_link;
  std::optional<double> compute_efficiency;
  std::string emit;                // "", megatron, torchtitan, papaya
  std::vector<std::string> plans;  // the whole-network plans weighed; empty: every one
  int shown = 5;

  // Whether more GPUs, a ZeRO stage or a link were asked for.
  bool gpus_requested() const { return gpus != 1 || zero.has_value() || !link.empty(); }
  // Whether a layout was asked for (--gpus-per-node or any layout option).
  bool layout_requested() const;
};

// Which of the options a command has.
enum class LayoutChoice {
  searched,        // plan, recommend, limits: what is not fixed is chosen (--micro-batch, --plans, --layouts too)
  searched_stage,  // plan, recommend: the same, and the ZeRO stage chosen where --zero is not given
  given,           // predict: the layout given whole, its micro-batch the command's --batch
};
void add_parallel_options(CLI::App* cmd, ParallelOptions& options, LayoutChoice choice);

// The request of the options, --hardware and --budget (nullopt: the
// default), each degree not given left to the search. InputError for what
// the engine of --emit cannot run, a plan name that is not one.
workflow::ParallelRequest layout_search_request(const ParallelOptions& options, const std::string& hardware,
                                                std::optional<double> budget_bytes);
// The same, but where no layout was asked for, or it is `given`, each degree
// not given is 1: --gpus alone asks for data-parallel ranks.
workflow::ParallelRequest parallel_request(const ParallelOptions& options, LayoutChoice choice, const std::string& hardware,
                                           std::optional<double> budget_bytes);

// What writes one GPU's plan and step (or data-parallel ranks'): a plan
// file, a figure, a report, given as (option, value). A layout's answer is
// its table and --emit: InputError naming the first of them given.
void refuse_with_layout(const std::vector<std::pair<std::string, std::string>>& outputs);

// The one layout predict prices: each degree given or 1, d the rest of the
// GPUs, sequence parallelism on with tensor parallelism unless off, the
// global batch given or micro_batch·d·p (each pipeline stage a micro-batch
// in flight). InputError where the degrees do not divide the GPUs or the
// global batch is not whole micro-batches of every data-parallel GPU.
model::ParallelLayout given_layout(const ParallelOptions& options, int micro_batch);

}  // namespace papaya::cli
