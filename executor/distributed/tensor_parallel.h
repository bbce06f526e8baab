#pragma once
// A tensor-parallel group over Collectives: every rank of the job is one of
// the group (networks/tensor_group.h).
#include <memory>

#include "executor/distributed/collectives.h"
#include "executor/networks/network.h"
#include "executor/networks/tensor_group.h"

namespace papaya::executor {

// The group of `collectives`' ranks; they must outlive it. With
// `sequence_parallel` the tokens between the projections are split too, as
// Megatron-LM's sequence parallelism splits them: its all-gather and
// reduce-scatter are all-reduces here (Gloo has no reduce-scatter), with the
// same tensors held between forward and backward.
std::shared_ptr<TensorGroup> tensor_group(Collectives& collectives, bool sequence_parallel);

// With the tokens split, each rank's gradient of a weight every rank holds
// whole (Network::replicated_weights: the norms') is of its tokens alone:
// sums them over the group, after backward and before the step.
void sum_replicated_gradients(const Network& network, TensorGroup& group);

}  // namespace papaya::executor
