#include "executor/layers/elementwise.h"

#include "executor/moms/functions.h"

namespace papaya::executor {

namespace {
std::vector<Slot> activation_slots(const std::string& kind) {
  TORCH_CHECK(kind == "gelu" || kind == "silu" || kind == "relu", "unknown activation ", kind);
  if (kind == "relu") return {{"output", SlotKind::mask}};  // backward needs only its sign
  return {{"input", SlotKind::activation}};
}
}  // namespace

Activation::Activation(const std::string& kind) : Layer(kind, activation_slots(kind)) {}

torch::Tensor Activation::forward(torch::Tensor x) {
  Scope scope(*this, {&x});
  if (uses_moms()) return scope.finish(moms::activation(*this, x));
  if (kind() == "relu") {
    torch::Tensor y = torch::relu(x);
    scope.saved("output", y);
    return scope.finish(y);
  }
  scope.saved("input", x);
  return scope.finish(kind() == "gelu" ? torch::gelu(x) : torch::silu(x));
}

Dropout::Dropout(double p) : Layer("dropout", {{"mask", SlotKind::mask}}), p(p) {}

torch::Tensor Dropout::forward(torch::Tensor x) {
  Scope scope(*this, {&x});
  if (uses_moms() && is_training()) return scope.finish(moms::dropout(*this, x));
  auto [y, mask] = torch::native_dropout(x, p, is_training());
  scope.saved("mask", mask);
  return scope.finish(y);
}

Mul::Mul() : Layer("mul", {{"a", SlotKind::activation}, {"b", SlotKind::activation}}) {}

torch::Tensor Mul::forward(torch::Tensor a, torch::Tensor b) {
  Scope scope(*this, {&a, &b});
  if (uses_moms()) return scope.finish(moms::mul(*this, a, b));
  scope.saved("a", a);
  scope.saved("b", b);
  return scope.finish(a * b);
}

}  // namespace papaya::executor
