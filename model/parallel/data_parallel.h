#pragma once
// N data-parallel ranks, one device each, as the model prices them
// (docs/memory-model.md, "Data parallelism"): each rank runs the profiled
// step at its own batch; what differs is what it holds of the static state
// and the exchange buffers (sharding.h), and the exchange itself on the link:
// gradients leave in buckets as backward produces them and hide behind the
// rest of backward; with ZeRO, parameters are gathered after the optimizer's
// step (stages 1, 2) or before each layer runs (3).
#include <string>
#include <vector>

#include "model/layer_model.h"
#include "model/parallel/link.h"
#include "model/parallel/parallel_layout.h"
#include "model/parallel/sharding.h"

namespace papaya::model {

// PyTorch DDP's default bucket, and papaya's DataParallel's.
constexpr double default_bucket_bytes = 25.0 * 1024 * 1024;

struct DataParallel {
  int ranks = 1;
  int zero_stage = 0;
  std::string link_name;  // "NVLink-2", or a measured link's
  LinkFit link;
  double bucket_bytes = default_bucket_bytes;
  StateHolding holding = StateHolding::measured;  // on every rank, one alone too
  // The ranks a mixture's experts' state is sharded over: expert
  // parallelism takes its GPUs from the data-parallel ones, so each expert
  // lives on ranks / expert of them (Megatron-LM's expert data parallelism,
  // torchtitan's); 0: all `ranks`, as every other layer's.
  int expert_ranks = 0;

  bool active() const { return ranks > 1; }
  // Throws InputError for a ZeRO stage outside 0-3 or fewer than one rank.
  void check() const;
  // The ranks an expert's gradients are reduced and its weights gathered
  // over, where they are fewer than `ranks`; 0 where every layer's are all.
  int expert_ranks_apart() const { return expert_ranks > 0 && expert_ranks != ranks ? expert_ranks : 0; }
};

// The data-parallel world of `layout`'s ranks over `link`: data x context
// of them at its ZeRO stage, each expert's state over the ranks its expert
// parallelism leaves it. Data parallelism alone is the layout with every
// other degree 1.
DataParallel data_parallel_of(const ParallelLayout& layout, const std::string& link_name, const LinkFit& link,
                              StateHolding holding = StateHolding::measured);

// Whether `world`'s trainer keeps the weights in the half type the model
// computes in (Megatron-LM in half precision), so that no layer holds a
// copy cast to compute with (LayerFit::parameter_copy_bytes).
bool computes_with_held_weights(const LayerModel& model, const DataParallel& world);

// The model's weights (its layers' parameter bytes) and static bytes taken
// apart, as `world`'s trainer holds them.
RankStatic whole_static(const LayerModel& model, const DataParallel& world);

// What a model's weights, gradients and optimizer state are made of in any
// data-parallel world: its parameter and trained bytes, its experts' part
// of them, the static bytes its profile measured and its precision.
struct StateBytes {
  double parameters = 0, trainable = 0, expert_parameters = 0, expert_trainable = 0;
  double static_bytes = 0;
  bool half_precision = false;  // computes in a half type (not fp32)
};
StateBytes state_bytes(const LayerModel& model);
// Of the layers `held` says (one flag a layer), with `static_bytes` their static bytes.
StateBytes state_bytes(const LayerModel& model, const std::vector<bool>& held, double static_bytes);

// The weights, gradients and optimizer state one rank of `world` holds:
// its ZeRO stage's share, the experts' over DataParallel::expert_ranks.
RankStatic rank_static(const LayerModel& model, const DataParallel& world);
RankStatic rank_static(const StateBytes& state, const DataParallel& world);
RankStatic whole_static(const StateBytes& state, const DataParallel& world);
double static_bytes_per_rank(const LayerModel& model, const DataParallel& world);

// What one rank holds beyond (negative: short of) what the profiled process
// held, at every point of the step: its share of the static state as its
// trainer holds it less the profile's, plus the exchange buffers. 0 for one
// rank holding the state as measured.
double rank_bytes_shift(const LayerModel& model, const DataParallel& world);

// What a ZeRO-3 rank holds beyond that at a point of the step, as papaya's
// executor gathers: a layer's weights whole while its forward runs (or its
// recomputation); from the start of its backward to the next's, its own and
// the next one's (the nearest earlier layer with weights), gathered ahead of
// use. 0 under other stages.
struct GatheredWeights {
  const LayerModel& model;
  const DataParallel& world;
  double forward(int layer) const;
  double backward(int layer) const;
  // Before `layer`'s backward starts: what the one before it (in backward) holds.
  double before_backward(int layer) const;
  // While `layer` is recomputed for the backward of a segment ending at `last`.
  double recompute(int layer, int last) const;

 private:
  double weights(int layer) const;
  int next_in_backward(int layer) const;  // -1: none
};

}  // namespace papaya::model
