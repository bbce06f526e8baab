#pragma once
// Each layer, forward and backward, at a batch larger than the whole network
// is profiled at: a layer inside a segment (a block) within a run of its
// segment alone, any other layer by itself. A whole network at a large batch
// may not fit; one block does. The time curves the model extrapolates get a
// point where the cost per sample has settled, which small batches do not
// show: on a CPU the matrix products of a few rows run on packing overheads
// and per-sample costs change as caches fill (bench/RESULTS.md); on a GPU
// small batches leave the device idle. Each segment's run also gives the
// work between its layers (residual sums, copies), which grows with the batch
// too, and its recompute. Each layer is also run at the rungs between the
// profiled batches and the probe's (model::LayerProbe::rungs), timed in the
// same rounds: where a kernel changes with the batch, a line from the
// profiled batches to the probe's cuts across it.
//
// Inputs are those of one forward at a batch the network ran at, repeated
// along the batch; an input gets a gradient where it needed one in that
// forward. Times are the layer timer's (the same markers as a whole step);
// bytes the layer recorder's, whose scratch above each pass's start equals,
// for a layer within a block, the one the whole step takes at that batch.
#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "executor/data.h"
#include "executor/memory.h"
#include "executor/networks/network.h"
#include "model/profile.h"
#include "profiler/layer_timer.h"

namespace papaya::profiler {

struct ProbeOptions {
  int64_t from = 1;               // a batch the whole network ran at: its inputs are repeated
  int64_t batch = 0;              // the probe batch (> from)
  std::vector<int64_t> profiled;  // batches (<= from) the segments also run at, for their work between layers
  // Every probe is run once per round, the probes in turn, and each figure is
  // its median over the rounds (as the profile's batches, ProfileOptions::
  // rounds): a slow moment of a shared machine falls on one round of a few
  // probes instead of on every run of one. The first round also warms up
  // (memory and kernels for the new shapes).
  int rounds = 3;
  int64_t memory_limit = 0;  // > 0: as BatchRunOptions's
  // One run of each at the probe batch for its bytes alone (a plan's
  // scratch): no rounds, rungs, work between layers or recompute timed.
  bool bytes_only = false;
  // After each segment and each layer outside one that runs alone, in each
  // round (its probe and its rungs, model::LayerProbe::rungs).
  std::function<void()> on_probe;
};

struct LayerProbes {
  // network.layers() order; none: out of memory, or a layer that does not run alone (executor::Layer::runs_alone)
  std::vector<std::optional<model::LayerProbe>> layers;
  std::vector<std::optional<model::SegmentProbe>> segments;  // network.segments() order; none: out of memory
  std::vector<std::vector<double>> between_s;  // per segment, per ProbeOptions::profiled batch (empty: out of memory)
};

// Runs in the network's training mode; leaves the parameters' gradients
// changed (the profile's steps are over when it runs).
LayerProbes probe_layers(executor::Network& network, executor::DataSource& data, executor::MemoryTracker& memory,
                         LayerTimer& timer, const ProbeOptions& options);

}  // namespace papaya::profiler
