#pragma once
// How long the network's own code holds each saved tensor in forward: a
// tensor outlives its last saver when the code still uses it later (a
// residual's input, kept for the add at the end of the block) or holds it to
// the end of a statement. A plan that stores a tensor in another form frees
// the raw one only then, so the model needs it to price the plan.
#include <map>
#include <string>
#include <vector>

#include "executor/networks/network.h"

namespace papaya::profiler {

// One forward of the network on a synthetic batch, without autograd (so no
// layer keeps anything for backward) and in eval mode: for each layer
// (network.layers() order), each of its slots mapped to the index of the last
// layer whose forward starts, or ends, while the slot's storage is still
// allocated (at least the saver's own index).
std::vector<std::map<std::string, int>> last_forward_uses(executor::Network& network, int64_t batch);

}  // namespace papaya::profiler
