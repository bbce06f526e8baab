#pragma once
// The layer model of a short profile (batches 1, 2, 4; one warm-up step, two
// measured, one round, no probes): enough for the bytes the scaling tests
// compare, which do not depend on how long the clock ran.
#include <optional>
#include <string>
#include <vector>

#include "model/catalog/network_config.h"
#include "model/layer_model.h"

namespace papaya::profiler {

model::LayerModel quick_fit(const std::string& network, std::optional<int> seq_len = std::nullopt, int profile_blocks = 0);
model::LayerModel quick_fit(const model::NetworkConfig& network, int profile_blocks = 0, const std::string& precision = "fp32");

// A scaled model's layers, one by one, against a profiled one's: the same
// descriptions (paths, kinds, saved tensors and their sizes, FLOPs).
// Returns false (and has failed the test) where they differ.
bool same_layer_descriptions(const model::LayerModel& scaled, const model::LayerModel& whole);

// A fraction of a byte per figure: what the least-squares fit of exact
// allocator figures leaves in floating point, far below any tensor.
void expect_same_bytes(double scaled, double whole, const std::string& what);
// Each memory figure of a scaled model's layer (its starts, peaks and gap
// peaks) as a profiled one's, by expect_same_bytes.
void expect_same_memory_figures(const model::LayerFit& scaled, const model::LayerFit& whole);

// A scaled model's segments (their paths and inputs) and the peaks of keep,
// recompute-all, quantize-4 and recompute-all+quantize-4+invert at each of
// `batches` as a profiled one's, by expect_same_bytes.
void expect_same_segments_and_peaks(const model::LayerModel& scaled, const model::LayerModel& whole,
                                    const std::vector<int>& batches);

// The largest scratch a layer takes above the bytes held when it starts, at
// `batch`: a kernel's own (one may pick its algorithm by the sizes), which
// need not be a polynomial of a scaled size, and bounds what a scaled
// model's peaks may miss.
double largest_scratch(const model::LayerModel& m, int batch);

// A scaled model's bytes against a profiled one's at `batch`: the static
// bytes and the bytes held at every layer's start to the byte, the peaks of
// keep, recompute-all, quantize-4 and recompute-all+quantize-4+invert within
// the profiled model's largest scratch.
void expect_bytes_as_profiled(const model::LayerModel& scaled, const model::LayerModel& whole, int batch);

}  // namespace papaya::profiler
