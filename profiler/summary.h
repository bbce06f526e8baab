#pragma once
// Figures read off a profile for people and for checks: what `papaya
// profile` prints, and what tests/profiler compares with the measurements.
// No LibTorch.
#include <cstddef>

#include "model/profile.h"

namespace papaya::profiler {

// Bytes of the saved storages that `layer` is the first to save (a storage
// several slots share counts once, at its first slot), at `batch` samples.
// Summed over the layers: what the saved tensors hold at the end of forward.
double new_saved_bytes(const model::LayerProfile& layer, int batch);

// What the keep step saves for backward: new_saved_bytes summed over every
// layer, and the parameter copies their native paths hold (bf16).
double saved_bytes(const model::Profile& profile, int batch);

// The share of the mean iteration time at batches[index] that the per-layer
// forward and backward times cover (the rest: work between layers, the
// optimizer step, zeroing gradients). 0 for an OOM batch.
double layer_time_share(const model::Profile& profile, size_t index);

}  // namespace papaya::profiler
