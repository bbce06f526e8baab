#pragma once
// What expert parallelism changes for a data-parallel rank (data_parallel.h):
// it takes its GPUs from the data-parallel ones, so each expert lives on
// fewer ranks than the other layers (DataParallel::expert_ranks_apart), which
// reduce its gradients, gather its weights and shard its state among
// themselves (Megatron-LM's expert data-parallel group, torchtitan's).
#include "model/layer_model.h"
#include "model/parallel/data_parallel.h"

namespace papaya::model {

// How many ranks share the optimizer's step under ZeRO-1 and above, one
// rank stepping 1/that of it: `world`'s, or with experts apart as many as
// make a rank's share of the optimizer state (rank_static's).
double optimizer_ranks(const LayerModel& model, const DataParallel& world);
double optimizer_ranks(const StateBytes& state, const DataParallel& world);

}  // namespace papaya::model
