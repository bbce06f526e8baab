#include "cli/options/parallel_options.h"

#include <algorithm>
#include <tuple>

#include "cli/options/number_checks.h"
#include "cli/report/engine_arguments.h"
#include "model/error.h"
#include "model/plan.h"

namespace papaya::cli {

void refuse_with_layout(const std::vector<std::pair<std::string, std::string>>& outputs) {
  for (const auto& [option, value] : outputs) {
    if (value.empty()) continue;
    throw InputError(option + " " + value +
                     ": writes one GPU's plan and step (or data-parallel ranks'); a layout of "
                     "tensor, pipeline, context or expert parallelism answers with its table, and --emit writes it "
                     "for an engine");
  }
}

bool ParallelOptions::layout_requested() const {
  return gpus_per_node > 0 || compute_efficiency || tensor || pipeline || virtual_stages || context || expert || micro_batch ||
         global_batch || !sequence.empty() || !offload.empty() || !overlap_grad_reduce.empty() || !emit.empty() || !plans.empty();
}

void add_parallel_options(CLI::App* cmd, ParallelOptions& o, LayoutChoice choice) {
  const bool search = choice != LayoutChoice::given;
  cmd->add_option("--gpus", o.gpus,
                  "Data-parallel GPUs (one rank each): memory per GPU, samples/s of all, the gradient exchange on --link")
      ->capture_default_str()
      ->check(within(o.gpus, 1, 65536));
  cmd->add_option("--zero", o.zero,
                  std::string("With --gpus: the ZeRO stage, 0 (plain data parallelism) to 3 (weights sharded too)") +
                      (choice == LayoutChoice::searched_stage ? "; default: the fastest that fits" : "; default: 0"))
      ->check(within(o.zero, 0, 3));
  cmd->add_option("--link", o.link,
                  "With --gpus: the link between the GPUs of a node, a catalog entry (papaya hardware lists them: NVLink-4, "
                  "PCIe-4-x16, InfiniBand-NDR, ...) or a file from papaya profile --comm --out; default: the hardware's "
                  "interconnect (more GPUs than a node's exchange over --inter-node-link)");
  const std::string with = "With --gpus: ";
  cmd->add_option("--gpus-per-node", o.gpus_per_node,
                  "Lay a transformer out over --gpus GPUs, this many a node, as LLM training does: tensor, sequence, "
                  "pipeline, context, expert and data parallelism with ZeRO, each chosen for the most tokens/s within "
                  "the memory of each GPU unless fixed below [default: 8 where any option below is given]")
      ->check(within(o.gpus_per_node, 1, 1024));
  cmd->add_option("--tp", o.tensor, with + "tensor-parallel GPUs (Megatron's column/row-parallel projections)")
      ->check(within(o.tensor, 1, 65536));
  cmd->add_option("--pp", o.pipeline, with + "pipeline stages (1F1B)")->check(within(o.pipeline, 1, 65536));
  cmd->add_option("--vp", o.virtual_stages, with + "model chunks a pipeline stage (interleaved 1F1B)")
      ->check(within(o.virtual_stages, 1, 64));
  cmd->add_option("--cp", o.context, with + "context-parallel GPUs (ring attention)")->check(within(o.context, 1, 65536));
  cmd->add_option("--ep", o.expert, with + "expert-parallel GPUs (a mixture of experts' experts split)")
      ->check(within(o.expert, 1, 65536));
  cmd->add_option("--sp", o.sequence,
                  with + "sequence parallelism beside tensor parallelism, on or off [default: on where --tp > 1]")
      ->check(CLI::IsMember({"on", "off"}));
  cmd->add_option("--overlap-grad-reduce", o.overlap_grad_reduce,
                  with +
                      "data-parallel gradients reduced in buckets behind the rest of backward, on or off (off: all of "
                      "them once backward is done, as Megatron-LM runs without its --overlap-grad-reduce) [default: on]")
      ->check(CLI::IsMember({"on", "off"}));
  cmd->add_option("--offload-optimizer", o.offload,
                  with + "the optimizer's state and step on the host (ZeRO-Offload), on or off [default: chosen]")
      ->check(CLI::IsMember({"on", "off"}));
  if (search) {
    cmd->add_option("--micro-batch", o.micro_batch, with + "samples a micro-batch [default: chosen]")
        ->check(within(o.micro_batch, 1, 1 << 20));
    cmd->add_option("--plans", o.plans,
                    with +
                        "the whole-network plans of memory optimizations weighed, comma-separated (keep, recompute-attention, "
                        "recompute-all, quantize-4, ...) [default: every one]")
        ->delimiter(',');
  }
  cmd->add_option("--global-batch", o.global_batch,
                  with + "samples an iteration, a multiple of the data-parallel GPUs x the micro-batch [default: " +
                      (search ? "about 4M tokens]" : "micro-batch x data-parallel GPUs x pipeline stages]"))
      ->check(within(o.global_batch, 1, 1 << 30));
  cmd->add_option("--inter-node-link", o.inter_node_link,
                  with +
                      "the link between nodes of 8 GPUs (--gpus-per-node), papaya hardware lists them [default: "
                      "InfiniBand-HDR beside NVLink-3, else InfiniBand-NDR]; --link names the one within a node");
  cmd->add_option("--compute-efficiency", o.compute_efficiency,
                  with +
                      "the share of the GPU's peak FLOP/s its matmuls reach, where the profile is from another machine "
                      "[default: 0.5, a typical one]")
      ->check(within(o.compute_efficiency, 0.01, 1.0));
  cmd->add_option("--emit", o.emit,
                  with +
                      "print the best layout as an engine's arguments: megatron (Megatron-LM's "
                      "command line), torchtitan (a TOML job config) or papaya (papaya train's options)")
      ->check(CLI::IsMember({"megatron", "torchtitan", "papaya"}));
  if (search) {
    cmd->add_option("--layouts", o.shown, with + "layouts shown, best first")
        ->capture_default_str()
        ->check(within(o.shown, 1, 1000));
  }
}

namespace {

// Only what the engine can run; a fixed choice it cannot is an error.
void keep_to_engine(model::LayoutQuestion& q, const std::string& engine) {
  const model::EngineLimits limits = model::engine_limits(emitted_engine(engine));
  const std::string with = "--emit " + engine + ": ";
  if (!limits.plans.empty()) q.plans = limits.plans;
  q.zero_stages = limits.zero_stages;
  q.even_stages = limits.even_stages;
  q.accumulates = limits.accumulates;
  if (q.zero_stage && std::find(q.zero_stages.begin(), q.zero_stages.end(), *q.zero_stage) == q.zero_stages.end()) {
    throw InputError(with + "--zero " + std::to_string(*q.zero_stage) + " has no " + engine + " argument");
  }
  if (!limits.offloads_optimizer) {
    if (q.offload_optimizer.value_or(false)) throw InputError(with + "--offload-optimizer on has no " + engine + " argument");
    q.offload_optimizer = false;
  }
  if (limits.sequence_with_tensor) {
    if (q.sequence && !*q.sequence) throw InputError(with + "--sp off: its tensor parallelism always splits the norms' tokens");
    q.sequence.reset();  // on wherever t > 1
  }
  for (auto [runs, degree, flag] : {std::tuple{limits.interleaves, &q.virtual_stages, "--vp"},
                                    {limits.splits_context, &q.context, "--cp"},
                                    {limits.splits_experts, &q.expert, "--ep"}}) {
    if (runs) continue;
    if (degree->value_or(1) != 1)
      throw InputError(with + flag + " " + std::to_string(**degree) + " has no " + engine + " argument");
    *degree = 1;
  }
}

}  // namespace

workflow::ParallelRequest layout_search_request(const ParallelOptions& o, const std::string& hardware,
                                                std::optional<double> budget_bytes) {
  workflow::ParallelRequest r;
  r.hardware = hardware;
  r.intra_node_link = o.link;
  r.inter_node_link = o.inter_node_link;
  if (o.gpus_per_node > 0) r.gpus_per_node = o.gpus_per_node;
  r.compute_efficiency = o.compute_efficiency;
  r.overlap_grad_reduce = o.overlap_grad_reduce != "off";
  r.budget_bytes = budget_bytes;
  r.keep = static_cast<size_t>(o.shown);
  model::LayoutQuestion& q = r.question;
  q.gpus = o.gpus;
  q.global_batch = o.global_batch.value_or(0);
  q.tensor = o.tensor, q.pipeline = o.pipeline, q.virtual_stages = o.virtual_stages, q.context = o.context;
  q.expert = o.expert, q.micro_batch = o.micro_batch, q.zero_stage = o.zero;
  if (!o.sequence.empty()) q.sequence = o.sequence == "on";
  if (!o.offload.empty()) q.offload_optimizer = o.offload == "on";
  for (const std::string& plan : o.plans) {
    if (!model::is_plan_name(plan)) throw InputError("--plans: '" + plan + "' is not a whole-network plan name");
  }
  q.plans = o.plans;
  if (!o.emit.empty()) {
    keep_to_engine(q, o.emit);
    if (!r.overlap_grad_reduce && !model::engine_limits(emitted_engine(o.emit)).reduces_after_backward) {
      throw InputError("--emit " + o.emit + ": --overlap-grad-reduce off has no " + o.emit +
                       " setting (its gradients are reduced behind backward)");
    }
    r.engine = emitted_engine(o.emit);
    r.engine_arguments = true;
  }
  return r;
}

workflow::ParallelRequest parallel_request(const ParallelOptions& o, LayoutChoice choice, const std::string& hardware,
                                           std::optional<double> budget_bytes) {
  workflow::ParallelRequest r = layout_search_request(o, hardware, budget_bytes);
  if (choice == LayoutChoice::given || !o.layout_requested()) {
    model::LayoutQuestion& q = r.question;
    for (std::optional<int>* degree : {&q.tensor, &q.pipeline, &q.virtual_stages, &q.context, &q.expert}) {
      if (!*degree) *degree = 1;
    }
  }
  return r;
}

model::ParallelLayout given_layout(const ParallelOptions& o, int micro_batch) {
  model::ParallelLayout l;
  l.tensor = o.tensor.value_or(1), l.pipeline = o.pipeline.value_or(1), l.virtual_stages = o.virtual_stages.value_or(1);
  l.context = o.context.value_or(1), l.expert = o.expert.value_or(1);
  const int split = l.tensor * l.pipeline * l.context;
  if (o.gpus % split != 0) {
    throw InputError("--tp x --pp x --cp = " + std::to_string(split) + " does not divide --gpus " + std::to_string(o.gpus));
  }
  l.data = o.gpus / split;
  l.sequence = o.sequence.empty() ? l.tensor > 1 : o.sequence == "on";
  l.zero_stage = o.zero.value_or(0);
  l.offload_optimizer = o.offload == "on";
  l.micro_batch = micro_batch;
  const int global = o.global_batch.value_or(micro_batch * l.data * l.pipeline);
  if (global % (micro_batch * l.data) != 0) {
    throw InputError("--global-batch " + std::to_string(global) + " is not whole micro-batches of " +
                     std::to_string(micro_batch) + " on each of " + std::to_string(l.data) + " data-parallel GPUs");
  }
  l.micro_batches = global / (micro_batch * l.data);
  return l;
}

}  // namespace papaya::cli
