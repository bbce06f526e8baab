#pragma once
// Gradients on the wire: a rank's trained parameters in backward's order,
// in runs of about a given size, each exchanged from one flat buffer.
#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace papaya::executor {

// `parameters` (trained, in the network's order) in backward's order (the
// last layers' first), in runs of about `bucket_bytes`: what goes on the
// wire together, end to end in one flat buffer.
struct GradientBucket {
  std::vector<torch::Tensor> parameters;
  std::vector<int64_t> offsets;  // of each in the flat buffer
  int64_t numel = 0;
};
std::vector<GradientBucket> gradient_buckets(const std::vector<torch::Tensor>& parameters, int64_t bucket_bytes);

}  // namespace papaya::executor
