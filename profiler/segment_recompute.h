#pragma once
// What checkpointing a segment costs in backward: its forward run again
// without autograd.
#include <torch/torch.h>

#include <vector>

#include "executor/networks/network.h"

namespace papaya::profiler {

// Seconds per segment (network.segments() order): the median of `repeats` runs
// of each segment's forward, without autograd and in the network's current
// mode, on its input in one forward of `batch`.
std::vector<double> time_recompute(executor::Network& network, const executor::Batch& batch, int repeats);

}  // namespace papaya::profiler
