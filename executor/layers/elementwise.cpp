#include "executor/layers/elementwise.h"

#include <algorithm>
#include <iterator>

#include "executor/moms/functions.h"

namespace papaya::executor {

namespace {
LayerKind activation_kind(const std::string& name) {
  const LayerKind kinds[] = {LayerKind::gelu, LayerKind::silu, LayerKind::relu, LayerKind::tanh};
  const auto* it = std::find_if(std::begin(kinds), std::end(kinds), [&](LayerKind k) { return name == model::to_string(k); });
  TORCH_CHECK(it != std::end(kinds), "unknown activation ", name);
  return *it;
}

std::vector<Slot> activation_slots(LayerKind kind) {
  if (kind == LayerKind::relu) return {{"output", SlotKind::mask}};  // backward needs only its sign
  if (kind == LayerKind::tanh) return {{"output", SlotKind::activation}};
  return {{"input", SlotKind::activation}};
}
}  // namespace

Activation::Activation(const std::string& kind) : Layer(activation_kind(kind), activation_slots(activation_kind(kind))) {}

torch::Tensor Activation::forward(torch::Tensor x) {
  Scope scope(*this, {&x});
  if (uses_moms()) return scope.finish(moms::activation(*this, x));
  if (kind() == LayerKind::relu || kind() == LayerKind::tanh) {
    torch::Tensor y = kind() == LayerKind::relu ? torch::relu(x) : torch::tanh(x);
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

Mul::Mul() : Layer(LayerKind::mul, {{"a", SlotKind::activation}, {"b", SlotKind::activation}}) {}

torch::Tensor Mul::forward(torch::Tensor a, torch::Tensor b) {
  Scope scope(*this, {&a, &b});
  if (uses_moms()) return scope.finish(moms::mul(*this, a, b));
  scope.saved("a", a);
  scope.saved("b", b);
  return scope.finish(a * b);
}

}  // namespace papaya::executor
