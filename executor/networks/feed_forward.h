#pragma once
// A transformer block's MLP, and each expert of a mixture: fc1 -> act -> fc2,
// or gated, fc2(act(fc1 x) * up x) (SwiGLU: SiLU, GeGLU: GELU), or
// fc2(glu(fc1 x, up x)) with GPT-OSS's clamped SwiGLU (its alpha and limit
// the mixture's); an expert's output weighted by its tokens' routing weights
// (a layer, so that plans store what it saves); then the residual dropout
// if any.
#include <memory>
#include <string>

#include "executor/layers/clamped_swiglu.h"
#include "executor/networks/lora.h"
#include "executor/networks/tensor_group.h"

namespace papaya::executor {

class FeedForward : public torch::nn::Module {
 public:
  FeedForward(const model::TransformerConfig& c, int64_t hidden, bool bias, const std::string& activation, double dropout,
              bool weighted = false);
  // `weight`: with `weighted`, a weight a row of x's (rows, 1).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& weight = {});
  // Keeps `group`'s rank's share of the hidden width: fc1 and up
  // column-parallel, fc2 row-parallel, its output summed over the group.
  void split(const std::shared_ptr<TensorGroup>& group);

  // HuggingFace's gate_proj, up_proj, down_proj in a gated MLP; fc1 is
  // gate_up_proj and there is no up where they are joined (Phi-3).
  Projection fc1, up, fc2;
  std::shared_ptr<Activation> act;
  std::shared_ptr<Mul> gate, weighted;
  std::shared_ptr<ClampedSwiGlu> glu;  // in place of act and gate: clamped_swiglu
  std::shared_ptr<Dropout> drop;

 private:
  std::shared_ptr<TensorGroup> group_;
};

}  // namespace papaya::executor
