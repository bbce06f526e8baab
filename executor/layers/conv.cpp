#include "executor/layers/conv.h"

#include <cmath>

#include "executor/moms/functions.h"

namespace papaya::executor {

Conv2d::Conv2d(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding, bool with_bias)
    : Layer(LayerKind::conv2d, {{"input", SlotKind::activation}}), stride(stride), padding(padding) {
  // He (fan-out) initialisation, as torchvision's ResNet.
  const double std = std::sqrt(2.0 / static_cast<double>(out * kernel * kernel));
  weight = register_parameter("weight", torch::randn({out, in, kernel, kernel}) * std);
  if (with_bias) bias = register_parameter("bias", torch::zeros({out}));
}

torch::Tensor Conv2d::forward(torch::Tensor x) {
  Scope scope(*this, {&x});
  if (uses_moms()) return scope.finish(moms::conv2d(*this, x, weight, bias));
  scope.saved("input", x);
  return scope.finish(torch::conv2d(x, cast(weight), bias.defined() ? cast(bias) : torch::Tensor(), stride, padding));
}

MaxPool2d::MaxPool2d(int64_t kernel, int64_t stride, int64_t padding)
    : Layer(LayerKind::maxpool, {{"input", SlotKind::activation}, {"indices", SlotKind::index}}),
      kernel(kernel),
      stride(stride),
      padding(padding) {}

torch::Tensor MaxPool2d::forward(torch::Tensor x) {
  Scope scope(*this, {&x});
  if (uses_moms()) return scope.finish(moms::max_pool2d(*this, x));
  auto [y, indices] = torch::max_pool2d_with_indices(x, kernel, stride, padding);
  scope.saved("input", x);
  scope.saved("indices", indices);
  return scope.finish(y);
}

GlobalAvgPool::GlobalAvgPool() : Layer(LayerKind::avgpool, {}) {}

torch::Tensor GlobalAvgPool::forward(torch::Tensor x) {
  Scope scope(*this, {&x});
  return scope.finish(x.mean({2, 3}));
}

}  // namespace papaya::executor
