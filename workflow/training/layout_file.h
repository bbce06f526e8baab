#pragma once
// The layout a trainer runs as the planner chose it, read from what plan and
// recommend wrote: the JSON of a layout search (its best layout, the first
// of "layouts", with its plan and precision), or a plan file made for
// data-parallel GPUs (its "predicted" GPUs and ZeRO stage, the file itself
// the plan).
#include <string>

#include "model/catalog/network_config.h"
#include "model/parallel/parallel_layout.h"

namespace papaya::workflow {

struct LayoutFile {
  model::ParallelLayout layout;  // micro_batch: what each rank trains at a time
  std::string plan;              // a plan name, or the plan file itself
  std::string precision;         // "": the file names none
  std::string network;           // the network it was made for ("": any)
  int tokens = 0;                // a sample's tokens it was priced at (0: not said)
};

// InputError naming the file and what is wrong: not JSON, neither kind of
// document, a layout that breaks a rule (model::check_layout), a plan file
// without its batch.
LayoutFile read_layout_file(const std::string& path);

// The data-parallel GPUs the plan file `plan` was made for (its
// "predicted" part); 1 where it names none, or `plan` is no JSON file (a
// plan name: its errors are the plan reader's).
int gpus_planned_for(const std::string& plan);

// InputError where `network` is not the one `file` (read from `path`) was
// made for, by name or by a sample's tokens.
void check_made_for(const LayoutFile& file, const model::NetworkConfig& network, const std::string& path);

}  // namespace papaya::workflow
