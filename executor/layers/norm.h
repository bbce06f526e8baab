#pragma once
// Normalisations: LayerNorm and RMSNorm over the last dimension, BatchNorm
// over channels.
#include "executor/layer.h"

namespace papaya::executor {

// LayerNorm saves its input and per-row mean and 1/std; RMSNorm (composed
// of native ops, as LibTorch has none) saves its input, per-row 1/rms and the
// normalised input.
class Norm : public Layer {
 public:
  Norm(const std::string& kind, int64_t dim);  // kind: layernorm | rmsnorm
  torch::Tensor forward(torch::Tensor x);
  torch::Tensor run(const std::vector<torch::Tensor>& in, const Batch&) override { return forward(in.at(0)); }
  // Frozen, RMSNorm saves no normalized input (only its weight's gradient
  // reads it); after a frozen front (an input that needs no gradient), it
  // saves neither its input nor rstd (only the input's gradient reads them).
  void freeze() override;
  void set_input_gradients(const std::vector<bool>& needed) override;
  torch::Tensor weight, bias;  // no bias for rmsnorm
  static constexpr double eps = 1e-5;
  // RMSNorm's per-row 1/sqrt(mean(x^2) + eps), as a sum and a division:
  // LibTorch's mean() keeps its input (here x^2, as large as x) for its
  // backward, which sum() does not, so that autograd keeps only the slots.
  static torch::Tensor rms_rstd(const torch::Tensor& x);
};

// Training-mode BatchNorm2d. Saves its input (and per-channel statistics,
// which do not grow with the batch).
class BatchNorm2d : public Layer {
 public:
  explicit BatchNorm2d(int64_t channels);
  torch::Tensor forward(torch::Tensor x);
  torch::Tensor run(const std::vector<torch::Tensor>& in, const Batch&) override { return forward(in.at(0)); }
  std::vector<torch::Tensor> running_state() override { return {running_mean, running_var}; }
  torch::Tensor weight, bias, running_mean, running_var;
  static constexpr double eps = 1e-5, momentum = 0.1;
};

}  // namespace papaya::executor
