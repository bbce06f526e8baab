#pragma once
// Checkpointing a segment: forward runs its layers without autograd and
// stores only its input (raw, quantized or swapped, as the segment's
// strategy says) and, where it draws random numbers, the random state;
// backward restores that (so dropout draws the same masks), rebuilds the
// input, runs the layers again with autograd (on their native path) and
// differentiates them. With a raw input the gradients are bit-identical to
// keeping everything.
#include <torch/torch.h>

namespace papaya::executor {

class Segment;

torch::Tensor checkpoint(Segment& segment, const torch::Tensor& x);

}  // namespace papaya::executor
