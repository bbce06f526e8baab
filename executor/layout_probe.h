#pragma once
// The model's view of a built network: layers, slots, segments, and which
// slots share storage, found by one forward pass at batch 1.
#include "executor/networks/network.h"
#include "model/network_layout.h"

namespace papaya::executor {

// One forward of the network on a synthetic batch of `batch` samples with
// every layer reported to `observer`: without autograd and in eval mode, so
// that neither batch-norm statistics nor the random state move. Returns the
// batch it ran on.
Batch probe_forward(Network& network, int64_t batch, LayerObserver& observer);

// Runs one forward at the smallest batch (no autograd, eval mode, so neither batch-norm
// statistics nor the random state move) to see which saved tensors share
// storage and which slots save each layer's output.
model::NetworkLayout probe_layout(Network& network);

}  // namespace papaya::executor
