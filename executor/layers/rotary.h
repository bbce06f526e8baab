#pragma once
// Rotary position embeddings (RoFormer; Llama, Mistral, Qwen2, GPT-NeoX):
// the first `dims` of each head's dimensions of q or k rotated by an angle
// that grows with the token's position. The rotation is linear, so backward
// rotates the gradient back: nothing batch-sized is saved.
#include "executor/layer.h"

namespace papaya::executor {

// x (batch, heads, tokens, head_dim) -> its rotation. Saves nothing.
class Rotary : public Layer {
 public:
  Rotary(int64_t dims, double base);
  torch::Tensor forward(torch::Tensor x);
  torch::Tensor run(const std::vector<torch::Tensor>& in, const Batch&) override { return forward(in.at(0)); }
  int64_t dims;
  double base;

 private:
  // cos and sin of each position's angles, (tokens, dims) in x's dtype, as
  // HuggingFace lays them out: each frequency twice, halves concatenated.
  std::pair<torch::Tensor, torch::Tensor> tables(const torch::Tensor& x);
  torch::Tensor cos_, sin_;
};

}  // namespace papaya::executor
