#pragma once
// The batch-independent tables a transformer's attention reads: the causal
// mask and the rotary cos/sin. One set per network, shared by its blocks and
// kept across steps, as HuggingFace builds them once per model: a copy per
// layer would grow with depth (32 blocks at 4096 tokens: 512 MiB of masks),
// and would make a network's memory other than its blocks' sum.
#include <torch/torch.h>

#include <utility>

namespace papaya::executor {

class SequenceTables {
 public:
  // True above the diagonal, (n, n).
  const torch::Tensor& causal_mask(int64_t n, const torch::Device& device);
  // cos and sin of each position's angles, (tokens, dims) in `dtype`, as
  // HuggingFace lays them out: each frequency twice, halves concatenated.
  std::pair<torch::Tensor, torch::Tensor> rotary(int64_t tokens, int64_t dims, double base, const torch::Device& device,
                                                 torch::ScalarType dtype);

 private:
  torch::Tensor above_diagonal_;
  torch::Tensor cos_, sin_;
  int64_t rotary_dims_ = 0;
  double rotary_base_ = 0;
};

}  // namespace papaya::executor
