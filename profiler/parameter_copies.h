#pragma once
// The compute-dtype (bf16) copies of parameters that each layer's native path
// leaves to autograd between forward and backward. Whether an op saves its
// weight depends on the op and on what needs a gradient (a linear whose input
// needs none keeps no weight), so the copies are measured, not declared.
#include <cstdint>
#include <vector>

#include "executor/networks/network.h"

namespace papaya::profiler {

// One forward with autograd, in eval mode, on a synthetic batch of `batch`
// samples: per layer (network.layers() order), the bytes of its casts
// (executor::Layer::cast) still allocated once forward has returned, while
// its graph is alive. All 0 when parameters are in the compute dtype.
std::vector<int64_t> parameter_copy_bytes(executor::Network& network, int64_t batch);

}  // namespace papaya::profiler
