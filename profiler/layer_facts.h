#pragma once
// What a profile says of each layer without timing it: its saved tensors
// (dtype, per-sample shape and size, storage sharing), output and parameter
// bytes, analytic FLOPs and bytes moved per sample.
#include <vector>

#include "executor/networks/network.h"
#include "model/network_layout.h"
#include "model/profile.h"

namespace papaya::profiler {

// Runs the network's forward at its smallest batch s and at 2s
// (profiler/layer_calls.h): a size that differs between the two grows with the
// batch, and its growth per sample is the per-sample size; one that does not is a fixed size (per_sample false).
// Storage sharing and output_saved_by are `layout`'s (executor::probe_layout).
// `measured` is left empty.
std::vector<model::LayerProfile> describe_layers(executor::Network& network, const model::NetworkLayout& layout);

}  // namespace papaya::profiler
