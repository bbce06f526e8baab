#include "executor/layers/conv.h"

#include <cmath>

#include "executor/storage/saved.h"

namespace papaya::executor {

// The MOM-aware convolution and max-pool.
namespace moms {
namespace {

using torch::autograd::Function;

struct ConvFunction : Function<ConvFunction> {
  // An absent bias is nullopt: an undefined tensor cannot be a Function's input.
  static at::Tensor forward(AutogradContext* ctx, const Conv2d* layer, const at::Tensor& x, const at::Tensor& weight,
                            const c10::optional<at::Tensor>& bias) {
    stash(ctx, {store_slot(*layer, 0, x)});
    ctx->save_for_backward({weight, bias.value_or(at::Tensor())});
    ctx->saved_data["stride"] = layer->stride;
    ctx->saved_data["padding"] = layer->padding;
    return at::conv2d(x, computed_as(weight, x), bias ? computed_as(*bias, x) : at::Tensor(), layer->stride, layer->padding);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const Unstashed saved = unstash(ctx);
    const auto params = ctx->get_saved_variables();
    const int64_t stride = ctx->saved_data["stride"].toInt(), padding = ctx->saved_data["padding"].toInt();
    ctx->saved_data.erase("stride");
    ctx->saved_data.erase("padding");
    const at::Tensor &weight = params[0], &bias = params[1];
    const at::Tensor w = computed_as(weight, grad[0]);
    const bool input_grad = ctx->needs_input_grad(0);
    const auto gradients = [&](const std::vector<at::Tensor>& s) -> variable_list {
      const std::vector<int64_t> bias_sizes{weight.size(0)};
      auto [gx, gw, gb] = at::convolution_backward(
          grad[0], s[0], w, bias.defined() ? at::OptionalIntArrayRef(bias_sizes) : c10::nullopt, {stride, stride},
          {padding, padding}, {1, 1}, /*transposed=*/false, {0, 0}, /*groups=*/1, {input_grad, true, bias.defined()});
      return {gx, gradient_for(weight, gw), gradient_for(bias, gb)};
    };
    const variable_list out = gradients(saved.tensors);
    saved.estimate_sensitivity(gradients, out);
    return {at::Tensor(), out[0], out[1], out[2]};
  }
};

struct MaxPoolFunction : Function<MaxPoolFunction> {
  static at::Tensor forward(AutogradContext* ctx, const MaxPool2d* layer, const at::Tensor& x) {
    auto [y, indices] = at::max_pool2d_with_indices(x, {layer->kernel, layer->kernel}, {layer->stride, layer->stride},
                                                    {layer->padding, layer->padding});
    stash(ctx, {store_slot(*layer, 0, x), store_slot(*layer, 1, indices)});
    ctx->saved_data["geometry"] = std::vector<int64_t>{layer->kernel, layer->stride, layer->padding};
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const Unstashed saved = unstash(ctx);
    const std::vector<int64_t> g = ctx->saved_data["geometry"].toIntVector();
    ctx->saved_data.erase("geometry");
    return {at::Tensor(), at::max_pool2d_with_indices_backward(grad[0], saved.tensors[0], {g[0], g[0]}, {g[1], g[1]},
                                                               {g[2], g[2]}, {1, 1}, /*ceil_mode=*/false, saved.tensors[1])};
  }
};

torch::Tensor conv2d(const Conv2d& layer, const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  return ConvFunction::apply(&layer, x, weight, bias.defined() ? c10::optional<at::Tensor>(bias) : c10::nullopt);
}

torch::Tensor max_pool2d(const MaxPool2d& layer, const torch::Tensor& x) { return MaxPoolFunction::apply(&layer, x); }

}  // namespace
}  // namespace moms

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
