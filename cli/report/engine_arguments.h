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
#include "model/parallel/engines.h"
#include "model/parallel/parallel_layout.h"

namespace papaya::cli {

// The engine `--emit` names: "megatron", "torchtitan" or "papaya"; InputError naming the engines otherwise.
model::Engine emitted_engine(const std::string& name);

// What `--emit megatron` prints: one argument a line, ending in " \".
std::string megatron_arguments(const model::LayoutEstimate& estimate, const model::TransformerShape& shape,
                               const std::string& precision);

// What `--emit torchtitan` prints: the [parallelism], [activation_checkpoint]
// and [training] tables of a job config.
std::string torchtitan_config(const model::LayoutEstimate& estimate, const model::TransformerShape& shape,
                              const std::string& precision);

// What `--emit papaya` prints: papaya train's layout arguments (--nproc, --tp
// and --sp, --pp and --micro-batches, --zero, --batch, --plan, --precision),
// one a line ending in " \", for `papaya train --network NET` on one host
// or under torchrun. InputError where papaya's trainer does not run the layout.
std::string papaya_arguments(const model::LayoutEstimate& estimate, const std::string& precision);

}  // namespace papaya::cli
