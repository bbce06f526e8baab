#pragma once
// --gpus N --gpus-per-node G on plan and recommend: a transformer laid out
// over N GPUs as LLM training lays it out (model/layout_pricing/), each degree
// chosen unless fixed (--tp, --pp, --vp, --cp, --ep, --sp, --zero,
// --offload-optimizer, --micro-batch), at --global-batch; the best layouts
// as a table, as JSON, or (--emit) as the arguments of the engines that run
// them.
#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/report/report.h"
#include "model/layer_model.h"
#include "workflow/data_parallel.h"
#include "workflow/layout_plan.h"

namespace papaya::cli {

struct LayoutOptions {
  int gpus_per_node = 0;  // 0: not asked for
  std::optional<int> tensor, pipeline, virtual_stages, context, expert, micro_batch, global_batch;
  std::string sequence, offload;    // "on", "off", "": chosen
  std::string overlap_grad_reduce;  // "on", "off", "": on
  std::string inter_node_link;
  std::optional<double> compute_efficiency;
  std::string emit;                // "", megatron, torchtitan
  std::vector<std::string> plans;  // the whole-network plans weighed; empty: every one
  int shown = 5;

  // Whether a layout was asked for (--gpus-per-node or any degree).
  bool requested() const;
};

// What writes one GPU's plan and step (or data-parallel ranks'): a plan
// file, a figure, a report, given as (option, value). A layout's answer is
// its table and --emit: InputError naming the first of them given.
void refuse_with_layout(const std::vector<std::pair<std::string, std::string>>& outputs);

// `search`: the command chooses what is not fixed (plan, recommend), with
// --micro-batch, --plans and --layouts; else (predict) the layout is given
// whole, its micro-batch the command's --batch.
void add_layout_options(CLI::App* cmd, LayoutOptions& options, bool search = true);

// The one layout predict prices: each degree given or 1, d the rest of the
// GPUs, sequence parallelism on with tensor parallelism unless off, the
// global batch given or micro_batch·d·p (each pipeline stage a micro-batch
// in flight). InputError where the degrees do not divide the GPUs or the
// global batch is not whole micro-batches of every data-parallel GPU.
model::ParallelLayout given_layout(const LayoutOptions& options, const workflow::DataParallelRequest& data_parallel,
                                   int micro_batch);

// The layout search's request from the options and --gpus/--zero/--link
// (`data_parallel`), --hardware and --budget (nullopt: the default).
workflow::LayoutPlanRequest layout_request(const LayoutOptions& options, const workflow::DataParallelRequest& data_parallel,
                                           const std::string& hardware, std::optional<double> budget_bytes);

// Plans the layouts of `model` and shows them (tables, --json, or --emit's
// arguments; `model_path`: where the model was written, said at the end).
// Throws InputError where none fits the budget.
void show_layouts(const model::LayerModel& model, const LayoutOptions& options, const workflow::LayoutPlanRequest& request,
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
void show_layout_limits(const model::LayerModel& model, const LayoutOptions& options, workflow::LayoutPlanRequest request,
                        const std::vector<std::string>& hardware, const TrainingQuestion& training, const std::string& html,
                        const Output& output);

// predict with a layout: the layout under each plan (`plan`, or every
// whole-network plan), whatever its peak, and its stages under the first.
void show_layout_prediction(const model::LayerModel& model, const LayoutOptions& options,
                            const workflow::LayoutPlanRequest& request, const model::ParallelLayout& layout,
                            const std::string& plan, const Output& output);

}  // namespace papaya::cli
