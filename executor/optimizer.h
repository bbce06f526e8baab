#pragma once
// The optimizer papaya trains with: AdamW over the network's parameters.
#include <torch/torch.h>

#include <memory>
#include <optional>
#include <vector>

#include "executor/networks/network.h"

namespace papaya::executor {

// AdamW with its state already allocated: every parameter's gradient (zeros)
// and moments, as the first step would make them. Every step then holds the
// same static memory, so the first step's figures are those of any other.
// It steps `shard` only where given (a pipeline stage's weights, or a ZeRO
// rank's flat spans of them: shard_of, executor/distributed/shards.h); every
// parameter still has its gradient here (ZeRO-2/3 let the others' go).
std::unique_ptr<torch::optim::AdamW> make_optimizer(Network& network, double lr, double weight_decay,
                                                    const std::optional<std::vector<torch::Tensor>>& shard = std::nullopt);

// Weights (stored ones as stored) + gradients + optimizer state + an FP8
// recipe's state, from the tensors themselves.
int64_t static_bytes(const Network& network, const torch::optim::Optimizer& optimizer);

}  // namespace papaya::executor
