#include "executor/layers/norm.h"

#include "executor/storage/saved.h"

namespace papaya::executor {

// The MOM-aware normalisations: LayerNorm, RMSNorm, BatchNorm2d.
namespace moms {
namespace {

using torch::autograd::Function;

struct LayerNormFunction : Function<LayerNormFunction> {
  static at::Tensor forward(AutogradContext* ctx, const Norm* layer, const at::Tensor& x, const at::Tensor& weight,
                            const at::Tensor& bias) {
    auto [y, mean, rstd] = at::native_layer_norm(x, {x.size(-1)}, computed_as(weight, x), computed_as(bias, x), Norm::eps);
    stash(ctx, {store_slot(*layer, 0, x), store_slot(*layer, 1, mean), store_slot(*layer, 2, rstd)});
    ctx->save_for_backward({weight, bias});
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const Unstashed saved = unstash(ctx);
    const auto params = ctx->get_saved_variables();
    const at::Tensor &weight = params[0], &bias = params[1];
    const at::Tensor w = computed_as(weight, grad[0]), b = computed_as(bias, grad[0]);
    const auto gradients = [&](const std::vector<at::Tensor>& s) -> variable_list {
      auto [gx, gw, gb] = at::native_layer_norm_backward(grad[0], s[0], {s[0].size(-1)}, s[1], s[2], w, b, {true, true, true});
      return {gx, gradient_for(weight, gw), gradient_for(bias, gb)};
    };
    const variable_list out = gradients(saved.tensors);
    saved.estimate_sensitivity(gradients, out);
    return {at::Tensor(), out[0], out[1], out[2]};
  }
};

// y = x * rstd * w with rstd = 1/sqrt(mean(x^2) + eps). As on the native
// path, the input gradient uses the input and rstd, the weight gradient the
// normalised input.
struct RmsNormFunction : Function<RmsNormFunction> {
  static at::Tensor forward(AutogradContext* ctx, const Norm* layer, const at::Tensor& x, const at::Tensor& weight) {
    const at::Tensor rstd = Norm::rms_rstd(x);
    const at::Tensor normalized = x * rstd;
    // The slots the layer has, in order: input and rstd (for the input's
    // gradient), normalized (for the weight's).
    const bool input_gradient = layer->has_slot("input"), weight_gradient = layer->has_slot("normalized");
    std::vector<c10::intrusive_ptr<Stored>> slots;
    if (input_gradient) {
      slots.push_back(store_slot(*layer, layer->slot_index("input"), x));
      slots.push_back(store_slot(*layer, layer->slot_index("rstd"), rstd));
    }
    if (weight_gradient) slots.push_back(store_slot(*layer, layer->slot_index("normalized"), normalized));
    stash(ctx, std::move(slots));
    ctx->saved_data["input_gradient"] = input_gradient;
    ctx->save_for_backward({weight});
    return normalized * computed_as(weight, x);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const Unstashed saved = unstash(ctx);
    const at::Tensor weight = ctx->get_saved_variables()[0];
    const bool input_gradient = ctx->saved_data["input_gradient"].toBool();
    const at::Tensor& g = grad[0];
    // d x = rstd * gn - x * rstd^3 * mean(gn * x), with gn = g * w, in place
    // where it can: two input-sized temporaries at a time at most, no more
    // than the native backward takes, which is what the model prices this
    // Function's working memory as (tests/executor/storage/mom_scratch_test.cpp).
    const auto gradients = [&](const std::vector<at::Tensor>& s) -> variable_list {
      const size_t normalized = input_gradient ? 2 : 0;
      const at::Tensor gw =
          s.size() > normalized ? gradient_for(weight, (g * s[normalized]).reshape({-1, g.size(-1)}).sum(0)) : at::Tensor();
      if (!input_gradient) return {at::Tensor(), gw};
      const at::Tensor &x = s[0], &rstd = s[1];
      at::Tensor gx = g * computed_as(weight, g);
      const at::Tensor c = (gx * x).mean(-1, /*keepdim=*/true).mul_(rstd.pow(3));
      gx.mul_(rstd).addcmul_(x, c, /*value=*/-1);
      return {gx, gw};
    };
    const variable_list out = gradients(saved.tensors);
    saved.estimate_sensitivity(gradients, out);
    return {at::Tensor(), out[0], out[1]};
  }
};

struct BatchNormFunction : Function<BatchNormFunction> {
  static at::Tensor forward(AutogradContext* ctx, BatchNorm2d* layer, const at::Tensor& x, const at::Tensor& weight,
                            const at::Tensor& bias) {
    auto [y, mean, invstd] = at::native_batch_norm(x, weight, bias, layer->running_mean, layer->running_var,
                                                   /*training=*/true, BatchNorm2d::momentum, BatchNorm2d::eps);
    stash(ctx, {store_slot(*layer, 0, x)});
    ctx->save_for_backward({weight, mean, invstd});
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const Unstashed saved = unstash(ctx);
    const auto kept = ctx->get_saved_variables();
    const auto gradients = [&](const std::vector<at::Tensor>& s) -> variable_list {
      auto [gx, gw, gb] = at::native_batch_norm_backward(grad[0], s[0], kept[0], {}, {}, kept[1], kept[2],
                                                         /*train=*/true, BatchNorm2d::eps, {true, true, true});
      return {gx, gw, gb};
    };
    const variable_list out = gradients(saved.tensors);
    saved.estimate_sensitivity(gradients, out);
    return {at::Tensor(), out[0], out[1], out[2]};
  }
};

torch::Tensor layer_norm(const Norm& layer, const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  return LayerNormFunction::apply(&layer, x, weight, bias);
}

torch::Tensor rms_norm(const Norm& layer, const torch::Tensor& x, const torch::Tensor& weight) {
  return RmsNormFunction::apply(&layer, x, weight);
}

torch::Tensor batch_norm(BatchNorm2d& layer, const torch::Tensor& x) {
  return BatchNormFunction::apply(&layer, x, layer.weight, layer.bias);
}

}  // namespace
}  // namespace moms

namespace {
LayerKind norm_kind(const std::string& name) {
  TORCH_CHECK(name == "layernorm" || name == "rmsnorm", "unknown norm ", name);
  return name == "layernorm" ? LayerKind::layernorm : LayerKind::rmsnorm;
}

std::vector<Slot> norm_slots(LayerKind kind) {
  if (kind == LayerKind::rmsnorm) {
    return {{"input", SlotKind::activation}, {"rstd", SlotKind::stats}, {"normalized", SlotKind::activation}};
  }
  return {{"input", SlotKind::activation}, {"mean", SlotKind::stats}, {"rstd", SlotKind::stats}};
}
}  // namespace

Norm::Norm(const std::string& kind, int64_t dim) : Layer(norm_kind(kind), norm_slots(norm_kind(kind))) {
  weight = register_parameter("weight", torch::ones({dim}));
  if (this->kind() == LayerKind::layernorm) bias = register_parameter("bias", torch::zeros({dim}));
}

torch::Tensor Norm::rms_rstd(const torch::Tensor& x) {
  return x.pow(2).sum(-1, /*keepdim=*/true).div(x.size(-1)).add(eps).rsqrt();
}

torch::Tensor Norm::forward(torch::Tensor x) {
  Scope scope(*this, {&x});
  if (uses_moms()) {
    return scope.finish(kind() == LayerKind::layernorm ? moms::layer_norm(*this, x, weight, bias)
                                                       : moms::rms_norm(*this, x, weight));
  }
  if (kind() == LayerKind::layernorm) {
    auto [y, mean, rstd] = torch::native_layer_norm(x, {x.size(-1)}, cast(weight), cast(bias), eps);
    scope.saved("input", x);
    scope.saved("mean", mean);
    scope.saved("rstd", rstd);
    return scope.finish(y);
  }
  const torch::Tensor rstd = rms_rstd(x);
  const torch::Tensor normalized = x * rstd;
  for (const auto& [slot, tensor] : {std::pair{"input", x}, {"rstd", rstd}, {"normalized", normalized}}) {
    if (has_slot(slot)) scope.saved(slot, tensor);
  }
  return scope.finish(normalized * cast(weight));
}

void Norm::freeze() {
  Layer::freeze();
  if (kind() == LayerKind::rmsnorm) reset_slots({slots()[0], slots()[1]});
}

void Norm::set_input_gradients(const std::vector<bool>& needed) {
  // Autograd keeps RMSNorm's input and rstd only for the input's gradient
  // (LayerNorm's fused kernel keeps its three whatever is needed).
  if (kind() != LayerKind::rmsnorm || needed.size() != 1 || needed[0] || !has_slot("normalized")) return;
  reset_slots({slot("normalized")});
}

BatchNorm2d::BatchNorm2d(int64_t channels) : Layer(LayerKind::batchnorm, {{"input", SlotKind::activation}}) {
  weight = register_parameter("weight", torch::ones({channels}));
  bias = register_parameter("bias", torch::zeros({channels}));
  running_mean = register_buffer("running_mean", torch::zeros({channels}));
  running_var = register_buffer("running_var", torch::ones({channels}));
}

torch::Tensor BatchNorm2d::forward(torch::Tensor x) {
  Scope scope(*this, {&x});
  // Statistics and running buffers stay fp32: a low-precision input is
  // normalised in fp32, as autocast does.
  const torch::Tensor input = x.scalar_type() == torch::kFloat ? x : x.to(torch::kFloat);
  if (uses_moms() && is_training()) return scope.finish(moms::batch_norm(*this, input).to(x.scalar_type()));
  scope.saved("input", input);
  const torch::Tensor y = torch::batch_norm(input, weight, bias, running_mean, running_var,
                                            /*training=*/is_training(), momentum, eps, /*cudnn_enabled=*/true);
  return scope.finish(y.to(x.scalar_type()));
}

}  // namespace papaya::executor
