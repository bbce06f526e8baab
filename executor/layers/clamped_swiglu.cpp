#include "executor/layers/clamped_swiglu.h"

#include <functional>

#include "executor/storage/saved.h"

namespace papaya::executor {
namespace moms {
namespace {

using torch::autograd::Function;

// Keep's slots, reported as a native path reports them.
using SlotReport = std::function<void(const std::string& slot, const at::Tensor& tensor)>;

constexpr const char* slot_names[] = {"gate", "up"};

at::Tensor unit(const at::Tensor& gate, const at::Tensor& up, double alpha, double limit) {
  const at::Tensor c = gate.clamp_max(limit);
  return (up.clamp(-limit, limit) + 1) * c * at::sigmoid(c * alpha);
}

struct ClampedSwiGluFunction : Function<ClampedSwiGluFunction> {
  // `planned`: the slots stored as the plan says (else as they are: keep).
  static at::Tensor forward(AutogradContext* ctx, const ClampedSwiGlu* layer, const at::Tensor& gate, const at::Tensor& up,
                            bool planned, const SlotReport* report) {
    const at::Tensor slots[] = {gate, up};
    std::vector<c10::intrusive_ptr<Stored>> stored;
    for (size_t i = 0; i < 2; ++i) {
      stored.push_back(planned ? store_slot(*layer, i, slots[i]) : store(slots[i], layer->slots()[i].kind, StoreSpec{}));
      if (report) (*report)(slot_names[i], slots[i]);
    }
    stash(ctx, std::move(stored));
    ctx->saved_data["alpha"] = layer->alpha;
    ctx->saved_data["limit"] = layer->limit;
    return unit(gate, up, layer->alpha, layer->limit);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const Unstashed saved = unstash(ctx);
    const double alpha = ctx->saved_data["alpha"].toDouble(), limit = ctx->saved_data["limit"].toDouble();
    const auto gradients = [&](const std::vector<at::Tensor>& s) -> variable_list {
      const at::Tensor& gate = s[0];
      const at::Tensor& up = s[1];
      const at::Tensor c = gate.clamp_max(limit), sigmoid = at::sigmoid(c * alpha);
      // d(c·sigmoid(alpha c))/dc = sigmoid + alpha c sigmoid (1 - sigmoid); a clamp passes the
      // gradient where its input is within its bounds, as ATen's clamp does.
      const at::Tensor slope = sigmoid * (1 + alpha * c * (1 - sigmoid));
      const at::Tensor grad_gate = grad[0] * (up.clamp(-limit, limit) + 1) * slope * gate.le(limit);
      const at::Tensor grad_up = grad[0] * c * sigmoid * up.ge(-limit).logical_and(up.le(limit));
      return {grad_gate, grad_up};
    };
    const variable_list out = gradients(saved.tensors);
    saved.estimate_sensitivity(gradients, out);
    return {at::Tensor(), out[0], out[1], at::Tensor(), at::Tensor()};
  }
};

}  // namespace
}  // namespace moms

ClampedSwiGlu::ClampedSwiGlu(double alpha, double limit)
    : Layer(LayerKind::clamped_swiglu, {{"gate", SlotKind::activation}, {"up", SlotKind::activation}}),
      alpha(alpha),
      limit(limit) {}

torch::Tensor ClampedSwiGlu::forward(torch::Tensor gate, torch::Tensor up) {
  Scope scope(*this, {&gate, &up});
  const bool recorded = torch::GradMode::is_enabled() && differentiated() && (gate.requires_grad() || up.requires_grad());
  if (!recorded) {
    // Nothing kept; what keep would save is reported, as a native path
    // reports it under no_grad (executor/layout_probe.h's probe).
    scope.saved("gate", gate);
    scope.saved("up", up);
    return scope.finish(moms::unit(gate, up, alpha, limit));
  }
  if (uses_moms()) return scope.finish(moms::ClampedSwiGluFunction::apply(this, gate, up, true, nullptr));
  const moms::SlotReport report = [&scope](const std::string& slot, const at::Tensor& t) { scope.saved(slot, t); };
  return scope.finish(moms::ClampedSwiGluFunction::apply(this, gate, up, false, &report));
}

}  // namespace papaya::executor
