#pragma once
// What checkpointing a segment costs: its forward run again in backward with
// autograd, less the autograd its forward then skips, and the checkpoint's
// own work (its function, the random state, a nested backward); and the
// gradient of its output, which a recomputed segment holds until its whole
// backward returns.
#include <torch/torch.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "executor/networks/network.h"

namespace papaya::profiler {

// Each segment's input (by path) in one forward of `batch` without autograd.
using SegmentInputs = std::unordered_map<std::string, torch::Tensor>;
SegmentInputs capture_segment_inputs(executor::Network& network, const executor::Batch& batch);

// Seconds per segment (network.segments() order): what checkpointing adds to
// a forward and backward of the segment on its captured input, in the
// network's current mode: the forward its backward runs again, recording
// autograd's graph (the median of `repeats`). Timed itself, not as the
// difference of a checkpointed and a plain pass: for a segment of
// microseconds on a busy machine that difference can come out zero or less.
// What checkpointing costs beyond it, the fit calibrates on a step under
// recompute-all.
std::vector<double> time_recompute(executor::Network& network, const SegmentInputs& inputs, int repeats);
// One segment's, on `input`.
double time_recompute(executor::Segment& segment, const torch::Tensor& input, int repeats);

// Per segment (network.segments() order): whether it returns its last
// layer's own output (a residual block's final ReLU, a post-norm block's
// norm) rather than a tensor formed after that layer (a pre-norm block's
// residual sum). Keep frees the gradient of such an output after the last
// layer's backward; a recomputed segment holds it through its backward.
std::vector<bool> returns_last_layer_output(executor::Network& network, const SegmentInputs& inputs);

}  // namespace papaya::profiler
