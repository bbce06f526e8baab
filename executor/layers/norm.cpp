#include "executor/layers/norm.h"

#include "executor/moms/functions.h"

namespace papaya::executor {

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
  scope.saved("input", x);
  scope.saved("rstd", rstd);
  scope.saved("normalized", normalized);
  return scope.finish(normalized * cast(weight));
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
