#pragma once
// Convolutional layers: 2-D convolution, max-pool, global average pool.
#include "executor/layer.h"

namespace papaya::executor {

// Saves its input.
class Conv2d : public Layer {
 public:
  Conv2d(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding, bool bias = false);
  torch::Tensor forward(torch::Tensor x);
  torch::Tensor run(const std::vector<torch::Tensor>& in, const Batch&) override { return forward(in.at(0)); }
  torch::Tensor weight, bias;
  int64_t stride, padding;
};

// Saves its input and the argmax indices (int64), as LibTorch does.
class MaxPool2d : public Layer {
 public:
  MaxPool2d(int64_t kernel, int64_t stride, int64_t padding);
  torch::Tensor forward(torch::Tensor x);
  torch::Tensor run(const std::vector<torch::Tensor>& in, const Batch&) override { return forward(in.at(0)); }
  int64_t kernel, stride, padding;
};

// Mean over height and width; saves nothing.
class GlobalAvgPool : public Layer {
 public:
  GlobalAvgPool();
  torch::Tensor forward(torch::Tensor x);
  torch::Tensor run(const std::vector<torch::Tensor>& in, const Batch&) override { return forward(in.at(0)); }
};

}  // namespace papaya::executor
