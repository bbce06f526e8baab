#pragma once
// The engines that train a layout, and what each can run: papaya's own
// trainer, Megatron-LM and torchtitan. The layout search keeps to an
// engine's limits; check_runs_on refuses a layout the engine cannot run.
// How an engine is given a layout (its arguments) is the cli's report.
#include <string>
#include <vector>

#include "model/parallel/parallel_layout.h"
#include "model/parallel/sharding.h"

namespace papaya::model {

enum class Engine { papaya, megatron, torchtitan };

struct EngineLimits {
  // The whole-network plans it has settings for; empty: every plan (papaya's
  // trainer runs papaya's plans). Megatron-LM and torchtitan: keep and
  // recompute-all (checkpointing every block), no activation quantization.
  std::vector<std::string> plans;
  std::vector<int> zero_stages;       // Megatron: 0, 1 (its distributed optimizer); torchtitan: 0 (DDP), 2 and 3 (FSDP2)
  bool offloads_optimizer = false;    // the optimizer alone on the host (Megatron's --optimizer-cpu-offload)
  bool sequence_with_tensor = false;  // torchtitan's tensor parallelism always splits the norms' tokens
  // Blocks split evenly over stages and chunks (--num-layers-per-virtual-pipeline-stage,
  // pipeline_parallel_layers_per_stage): a multiple of p·v.
  bool even_stages = true;
  bool interleaves = true;  // virtual pipeline stages (interleaved 1F1B)
  bool splits_context = true;
  bool splits_experts = true;
  // Micro-batches accumulated on one stage (gradient accumulation without a pipeline).
  bool accumulates = true;
  // Its gradients' all-reduce after backward as well as behind it
  // (Megatron-LM without or with --overlap-grad-reduce); else behind it.
  bool reduces_after_backward = false;
  StateHolding holding = StateHolding::measured;  // how it holds weights, gradients and optimizer state
};

// What `engine` runs on GPUs, or on CPU ranks (papaya's trainer gathers
// ZeRO-3's weights over Gloo alone).
EngineLimits engine_limits(Engine engine, bool on_gpus = true);
// "papaya's trainer", "Megatron-LM", "torchtitan": for messages.
std::string engine_name(Engine engine);

// InputError naming the first setting of `layout` that `engine` does not
// run on GPUs or CPU ranks (even stages are the network's: the layout
// search keeps to them).
void check_runs_on(const ParallelLayout& layout, Engine engine, bool on_gpus = true);

}  // namespace papaya::model
