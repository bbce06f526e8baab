#include "executor/layers/elementwise.h"

#include <algorithm>
#include <iterator>

#include "executor/storage/invert.h"
#include "executor/storage/saved.h"

namespace papaya::executor {

// The MOM-aware element-wise layers: activations (GELU/SiLU also inverted;
// ReLU, tanh and sigmoid keep their output), dropout, and the gate product.
namespace {

// ReLU, tanh and sigmoid keep their output (ReLU only its sign).
bool saves_output(LayerKind kind) { return kind == LayerKind::relu || kind == LayerKind::tanh || kind == LayerKind::sigmoid; }

// The output of one of those.
at::Tensor of_output_kind(LayerKind kind, const at::Tensor& x) {
  return kind == LayerKind::relu ? at::relu(x) : kind == LayerKind::tanh ? at::tanh(x) : at::sigmoid(x);
}

}  // namespace

namespace moms {
namespace {

using model::Form;
using torch::autograd::Function;

struct ActivationFunction : Function<ActivationFunction> {
  static at::Tensor forward(AutogradContext* ctx, const Layer* layer, const StoreSpec* output_spec, const at::Tensor& x) {
    const LayerKind kind = layer->kind();
    ctx->saved_data["kind"] = static_cast<int64_t>(kind);
    if (saves_output(kind)) {
      const at::Tensor y = of_output_kind(kind, x);
      stash(ctx, {store_slot(*layer, 0, y)});
      return y;
    }
    const at::Tensor y = kind == LayerKind::gelu ? at::gelu(x) : at::silu(x);
    const StoreSpec& spec = layer->store_spec(0);
    if (model::derives_from_output(spec.strategy.form)) {
      // The output is stored as its consumer stores it: the consumer's
      // store finds this copy and shares it.
      stash(ctx,
            {store(x >= branch_point(kind), model::SlotKind::mask, spec), store(y, model::SlotKind::activation, *output_spec)});
    } else {
      stash(ctx, {store_slot(*layer, 0, x)});
    }
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const Unstashed saved = unstash(ctx);
    const auto kind = static_cast<LayerKind>(ctx->saved_data["kind"].toInt());
    ctx->saved_data.erase("kind");
    const at::Tensor& g = grad[0];
    if (kind == LayerKind::relu) {
      const at::Tensor& kept = saved.tensors[0];
      return {at::Tensor(), at::Tensor(),
              kept.scalar_type() == at::kBool ? input_grad_from_mask(g, kept) : at::threshold_backward(g, kept, 0)};
    }
    if (saved.tensors.size() == 2) {
      return {at::Tensor(), at::Tensor(), input_grad_from_output(kind, g, saved.tensors[1], saved.tensors[0])};
    }
    const auto gradients = [&](const std::vector<at::Tensor>& s) -> variable_list {
      if (kind == LayerKind::tanh) return {at::tanh_backward(g, s[0])};
      if (kind == LayerKind::sigmoid) return {at::sigmoid_backward(g, s[0])};
      return {kind == LayerKind::gelu ? at::gelu_backward(g, s[0]) : at::silu_backward(g, s[0])};
    };
    const variable_list out = gradients(saved.tensors);
    saved.estimate_sensitivity(gradients, out);
    return {at::Tensor(), at::Tensor(), out[0]};
  }
};

struct DropoutFunction : Function<DropoutFunction> {
  static at::Tensor forward(AutogradContext* ctx, const Dropout* layer, const at::Tensor& x) {
    auto [y, mask] = at::native_dropout(x, layer->p, /*train=*/true);
    stash(ctx, {store_slot(*layer, 0, mask)});
    ctx->saved_data["scale"] = 1.0 / (1.0 - layer->p);
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const Unstashed saved = unstash(ctx);
    const double scale = ctx->saved_data["scale"].toDouble();
    ctx->saved_data.erase("scale");
    return {at::Tensor(), at::native_dropout_backward(grad[0], saved.tensors[0], scale)};
  }
};

struct MulFunction : Function<MulFunction> {
  static at::Tensor forward(AutogradContext* ctx, const Mul* layer, const at::Tensor& a, const at::Tensor& b) {
    stash(ctx, {store_operand(*layer, "a", a), store_operand(*layer, "b", b)});
    ctx->saved_data["a_shape"] = a.sizes().vec();  // a broadcast operand's gradient is summed back to its shape
    ctx->saved_data["b_shape"] = b.sizes().vec();
    return a * b;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const Unstashed saved = unstash(ctx);
    const at::Tensor& g = grad[0];
    const std::vector<int64_t> a_shape = ctx->saved_data["a_shape"].toIntVector(),
                               b_shape = ctx->saved_data["b_shape"].toIntVector();
    const auto gradients = [&](const std::vector<at::Tensor>& s) -> variable_list {
      return {s[1].defined() ? (g * s[1]).sum_to_size(a_shape) : at::Tensor(),
              s[0].defined() ? (g * s[0]).sum_to_size(b_shape) : at::Tensor()};
    };
    const variable_list out = gradients(saved.tensors);
    saved.estimate_sensitivity(gradients, out);
    return {at::Tensor(), out[0], out[1]};
  }
};

torch::Tensor dropout(const Dropout& layer, const torch::Tensor& x) { return DropoutFunction::apply(&layer, x); }

torch::Tensor mul(const Mul& layer, const torch::Tensor& a, const torch::Tensor& b) { return MulFunction::apply(&layer, a, b); }

}  // namespace

torch::Tensor activation(const Layer& layer, const StoreSpec& output_spec, const torch::Tensor& x) {
  return ActivationFunction::apply(&layer, &output_spec, x);
}

}  // namespace moms

namespace {
LayerKind activation_kind(const std::string& name) {
  const LayerKind kinds[] = {LayerKind::gelu, LayerKind::silu, LayerKind::relu, LayerKind::tanh, LayerKind::sigmoid};
  const auto* it = std::find_if(std::begin(kinds), std::end(kinds), [&](LayerKind k) { return name == model::to_string(k); });
  TORCH_CHECK(it != std::end(kinds), "unknown activation ", name);
  return *it;
}

std::vector<Slot> activation_slots(LayerKind kind) {
  if (kind == LayerKind::relu) return {{"output", SlotKind::mask}};  // backward needs only its sign
  if (kind == LayerKind::tanh || kind == LayerKind::sigmoid) return {{"output", SlotKind::activation}};
  return {{"input", SlotKind::activation}};
}
}  // namespace

Activation::Activation(const std::string& kind) : Layer(activation_kind(kind), activation_slots(activation_kind(kind))) {}

torch::Tensor Activation::forward(torch::Tensor x) {
  Scope scope(*this, {&x});
  if (uses_moms()) return scope.finish(moms::activation(*this, output_spec, x));
  if (saves_output(kind())) {
    torch::Tensor y = of_output_kind(kind(), x);
    scope.saved("output", y);
    return scope.finish(y);
  }
  scope.saved("input", x);
  return scope.finish(kind() == LayerKind::gelu ? torch::gelu(x) : torch::silu(x));
}

Dropout::Dropout(double p) : Layer(LayerKind::dropout, {{"mask", SlotKind::mask}}), p(p) {}

torch::Tensor Dropout::forward(torch::Tensor x) {
  Scope scope(*this, {&x});
  if (uses_moms() && is_training()) return scope.finish(moms::dropout(*this, x));
  auto [y, mask] = torch::native_dropout(x, p, is_training());
  scope.saved("mask", mask);
  return scope.finish(y);
}

Mul::Mul() : Layer(LayerKind::mul, {{"a", SlotKind::activation}, {"b", SlotKind::activation}}) { set_product_of_inputs(); }

torch::Tensor Mul::forward(torch::Tensor a, torch::Tensor b) {
  Scope scope(*this, {&a, &b});
  if (uses_moms()) return scope.finish(moms::mul(*this, a, b));
  if (has_slot("a")) scope.saved("a", a);
  if (has_slot("b")) scope.saved("b", b);
  return scope.finish(a * b);
}

}  // namespace papaya::executor
