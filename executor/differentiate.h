#pragma once
// Backward from a tensor's graph alone, its values let go first.
#include <torch/torch.h>

namespace papaya::executor {

// The edge into `output`'s graph: what differentiate() needs of it once its
// values are let go.
torch::autograd::Edge graph_of(const torch::Tensor& output);

// Differentiates the graph behind `root` from `output_grad`, accumulating
// into the leaves' .grad as keep's backward does. Gradients returned instead
// of accumulated would all be held until the backward ends.
void differentiate(const torch::autograd::Edge& root, const torch::Tensor& output_grad);

}  // namespace papaya::executor
