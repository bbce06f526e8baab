#pragma once
// Rotary position embeddings (RoFormer; Llama, Mistral, Qwen2, GPT-NeoX):
// the first `dims` of each head's dimensions of q or k rotated by an angle
// that grows with the token's position. The rotation is linear, so backward
// rotates the gradient back: nothing batch-sized is saved.
#include "executor/layer.h"
#include "executor/layers/sequence_tables.h"

namespace papaya::executor {

// x (batch, heads, tokens, head_dim) -> its rotation. Saves nothing.
class Rotary : public Layer {
 public:
  // `tables`: the network's, shared by its layers.
  Rotary(int64_t dims, double base, std::shared_ptr<SequenceTables> tables, model::RopeScaling scaling = {});
  torch::Tensor forward(torch::Tensor x);
  torch::Tensor run(const std::vector<torch::Tensor>& in, const Batch&) override { return forward(in.at(0)); }
  int64_t dims;
  double base;
  model::RopeScaling scaling;

 private:
  std::shared_ptr<SequenceTables> tables_;
};

}  // namespace papaya::executor
