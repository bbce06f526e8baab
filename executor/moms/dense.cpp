// The MOM-aware linear layer.
#include "executor/layers/dense.h"
#include "executor/moms/functions.h"
#include "executor/storage/saved.h"

namespace papaya::executor::moms {
namespace {

using torch::autograd::Function;

struct LinearFunction : Function<LinearFunction> {
  // An absent bias is nullopt: an undefined tensor cannot be a Function's input.
  static at::Tensor forward(AutogradContext* ctx, const Linear* layer, const at::Tensor& x, const at::Tensor& weight,
                            const c10::optional<at::Tensor>& bias) {
    stash(ctx, {store_slot(*layer, 0, x)});
    ctx->save_for_backward({weight, bias.value_or(at::Tensor())});
    return at::linear(x, computed_as(weight, x), bias ? computed_as(*bias, x) : at::Tensor());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const Unstashed saved = unstash(ctx);
    const auto params = ctx->get_saved_variables();
    const at::Tensor &weight = params[0], &bias = params[1];
    const at::Tensor& g = grad[0];
    const at::Tensor g2 = g.reshape({-1, g.size(-1)});
    const at::Tensor w = computed_as(weight, g);
    const auto gradients = [&](const std::vector<at::Tensor>& slots) -> variable_list {
      const at::Tensor& x = slots[0];
      return {g.matmul(w), gradient_for(weight, g2.t().mm(x.reshape({-1, x.size(-1)}))),
              bias.defined() ? gradient_for(bias, g2.sum(0)) : at::Tensor()};
    };
    const variable_list out = gradients(saved.tensors);
    saved.estimate_sensitivity(gradients, out);
    return {at::Tensor(), out[0], out[1], out[2]};
  }
};

}  // namespace

torch::Tensor linear(const Linear& layer, const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  return LinearFunction::apply(&layer, x, weight, bias.defined() ? c10::optional<at::Tensor>(bias) : c10::nullopt);
}

}  // namespace papaya::executor::moms
