#pragma once
// What a MOM-aware autograd Function keeps between forward and backward: its
// layer's slots in their stored forms, in ctx->saved_data as one capsule
// that backward takes out (saved_data entries outlive backward otherwise).
#include <torch/torch.h>

#include <functional>
#include <vector>

#include "executor/layer.h"
#include "executor/storage/stored.h"

namespace papaya::executor {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Slot `index` of `layer`, stored as the layer's plan says.
c10::intrusive_ptr<Stored> store_slot(const Layer& layer, size_t index, const at::Tensor& t);

// The operand `name` of a product of two inputs (Layer::set_input_gradients),
// stored as its slot says; nullptr where the layer keeps no such slot.
c10::intrusive_ptr<Stored> store_operand(const Layer& layer, const std::string& name, const at::Tensor& t);

// Forward: keeps the stored slots (a nullptr one restores as undefined).
void stash(AutogradContext* ctx, std::vector<c10::intrusive_ptr<Stored>> slots);

// Backward: the stored slots, restored, in the order stashed.
struct Unstashed {
  std::vector<c10::intrusive_ptr<Stored>> stored;
  std::vector<at::Tensor> tensors;

  using Gradients = std::function<variable_list(const std::vector<at::Tensor>&)>;
  // On an adaptive tensor's estimating step, reports to its AdaptiveBits how
  // much the layer's gradients (`gradients` of the restored slots, `exact`
  // from them as they are) change when that slot is requantized to 2 bits.
  void estimate_sensitivity(const Gradients& gradients, const variable_list& exact) const;
};
Unstashed unstash(AutogradContext* ctx);

// A parameter as the layer computes with it: in `like`'s dtype. MOM Functions
// take parameters as stored (fp32), save them so, and cast them in forward
// and again in backward, so that autograd holds no compute-dtype copy between
// the two (the native path often does: LayerProfile::parameter_copy_bytes).
// Their gradients go back in the parameter's dtype (gradient_for).
inline at::Tensor computed_as(const at::Tensor& parameter, const at::Tensor& like) {
  return parameter.defined() ? parameter.to(like.scalar_type()) : parameter;
}
inline at::Tensor gradient_for(const at::Tensor& parameter, const at::Tensor& gradient) {
  return gradient.defined() ? gradient.to(parameter.scalar_type()) : gradient;
}

// A capsule entry of saved_data, taken out (erased).
c10::intrusive_ptr<torch::CustomClassHolder> take_capsule(AutogradContext* ctx, const std::string& key);

}  // namespace papaya::executor
