#pragma once
// The layouts of N GPUs that train a transformer fastest within each GPU's
// memory (`papaya plan/recommend --gpus N --gpus-per-node G`): tensor
// parallelism t up to a node (sequence parallelism with it), context c,
// pipeline p with v interleaved chunks, expert e, data d = N/(t·c·p), the
// ZeRO stage, the optimizer offloaded or not, the micro-batch, and the
// memory optimizations of every stage (a whole-network plan) — each fixed
// where asked. Pruned by memory first: a layout whose weights, gradients
// and optimizer state alone pass the budget is not priced, and micro-batches
// grow only while some plan fits. Then by time: a micro-batch whose least
// time (LayoutPricer::time_floor_seconds) is slower than the answer found
// so far is not priced either.
#include <optional>
#include <string>
#include <vector>

#include "model/layout_pricing/layout_pricer.h"

namespace papaya::model {

struct LayoutQuestion {
  int gpus = 1;
  double budget_bytes = 0;                   // per GPU
  int global_batch = 0;                      // samples an iteration (a multiple of d·micro-batch); 0: default_global_batch
  std::vector<std::string> plans;            // whole-network plans to weigh (keep first)
  std::vector<int> zero_stages{0, 1, 2, 3};  // those an engine can run
  bool even_stages = false;                  // blocks a multiple of p·v (an engine's even split)
  bool accumulates = true;                   // micro-batches accumulated without a pipeline (an engine's)
  // Fixed where set.
  std::optional<int> tensor, pipeline, virtual_stages, context, expert, zero_stage, micro_batch;
  std::optional<bool> sequence, offload_optimizer;
  // Threads that price layouts at once, each a worker of the pricer; 0: default_workers().
  // The answer is the same on any number.
  int workers = 0;
};

// Layouts whose tokens/s are within this fraction of the fastest's are equals
// to the model (its time error on published runs is of this order): the one
// with the fewest moving parts among them leads.
constexpr double layout_time_tolerance = 0.05;

struct LayoutAnswer {
  // Those that fit (at most `keep`): the chosen first (the simplest within
  // layout_time_tolerance of the fastest: the fewest model-parallel
  // dimensions, interleaving, recompute and offloading), then most tokens/s first.
  std::vector<LayoutEstimate> best;
  std::string why;                        // why the first was chosen, in words
  std::optional<LayoutEstimate> nearest;  // where none fits: the least peak found
  int priced = 0, pruned = 0;             // layouts priced; (t, c, p, v, e, ZeRO, offload) choices pruned by their static bytes
  int skipped = 0;                        // (t, c, p, v, e, micro-batch) choices too slow to be in the answer
};

// Throws InputError where no layout of the GPUs exists (none divides the
// network: check_layout's reason for the first tried), or a fixed choice
// breaks a constraint.
LayoutAnswer search_layouts(const LayoutPricer& pricer, const LayoutQuestion& question, size_t keep = 5);

// The machine's cores, at most 8: each worker keeps stages of its own
// (LayoutRequest::stages_kept), which are megabytes on a large network.
int default_workers();

// The global batch when none is given: the samples of about 4M tokens
// (Llama 2's batch), rounded up to a multiple of `multiple` (the GPUs, so
// that every layout's data-parallel degree divides it).
int default_global_batch(int tokens, int multiple);

}  // namespace papaya::model
