#pragma once
// The batch-independent tables a transformer's attention reads: the causal
// mask and the rotary cos/sin. One set per network, shared by its blocks and
// kept across steps, as HuggingFace builds them once per model: a copy per
// layer would grow with depth (32 blocks at 4096 tokens: 512 MiB of masks),
// and would make a network's memory other than its blocks' sum.
#include <torch/torch.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "model/catalog/rotary_frequencies.h"

namespace papaya::executor {

class SequenceTables {
 public:
  // True above the diagonal, (n, n).
  const torch::Tensor& causal_mask(int64_t n, const torch::Device& device);
  // cos and sin of each position's angles, (tokens, dims) in `dtype`, as
  // HuggingFace lays them out: each frequency twice, halves concatenated;
  // times the scaling's magnitude (yarn's and longrope's attention factor).
  // One pair a base and scaling (Gemma 3's local and global blocks
  // alternate two); the frequencies are made again each call (a few dozen
  // powers) to find it.
  std::pair<torch::Tensor, torch::Tensor> rotary(int64_t tokens, int64_t dims, double base, const model::RopeScaling& scaling,
                                                 const torch::Device& device, torch::ScalarType dtype);

 private:
  struct Angles {
    torch::Tensor cos, sin;
  };
  torch::Tensor above_diagonal_;
  // By the frequencies and the magnitude they make (whatever base and
  // scaling made them).
  std::map<std::pair<std::vector<double>, double>, Angles> rotary_;
};

}  // namespace papaya::executor
