#pragma once
// A layout (model/layout_pricing/layout_pricer.h) as the engines that train LLMs
// take it: Megatron-LM's command-line arguments and a torchtitan job
// config (TOML), in the names of Megatron-LM core_v0.15.0
// (megatron/training/arguments.py) and torchtitan 238fa99 (the last
// release of its TOML job configs, torchtitan/config/job_config.py). The
// network's own arguments (layers, widths, tokenizer, data) are the user's.
#include <string>
#include <vector>

#include "model/layout_pricing/layout_pricer.h"
#include "model/parallel/parallel_layout.h"

namespace papaya::cli {

// What an engine can run, for the search to keep to.
struct EngineLimits {
  std::vector<std::string> plans;     // keep and recompute-all (checkpointing every block): no activation quantization
  std::vector<int> zero_stages;       // Megatron: 0, 1 (its distributed optimizer); torchtitan: 0 (DDP), 2 and 3 (FSDP2)
  bool offloads_optimizer = false;    // the optimizer alone on the host (Megatron's --optimizer-cpu-offload)
  bool sequence_with_tensor = false;  // torchtitan's tensor parallelism always splits the norms' tokens
  // Blocks split evenly over stages and chunks (--num-layers-per-virtual-pipeline-stage,
  // pipeline_parallel_layers_per_stage): a multiple of p·v.
  bool even_stages = true;
  model::StateHolding holding = model::StateHolding::measured;  // how it holds weights, gradients and optimizer state
};

// "megatron" or "torchtitan"; InputError naming the engines otherwise.
EngineLimits engine_limits(const std::string& engine);

// What `--emit megatron` prints: one argument a line, ending in " \".
std::string megatron_arguments(const model::LayoutEstimate& estimate, const model::TransformerShape& shape,
                               const std::string& precision);

// What `--emit torchtitan` prints: the [parallelism], [activation_checkpoint]
// and [training] tables of a job config.
std::string torchtitan_config(const model::LayoutEstimate& estimate, const model::TransformerShape& shape,
                              const std::string& precision);

}  // namespace papaya::cli
