#include "executor/precision.h"

#include "model/error.h"

namespace papaya::executor {
namespace {

// Whether LibTorch multiplies `dtype` matrices on `device`.
bool has_matmul(torch::ScalarType dtype, const torch::Device& device) {
  try {
    const torch::Tensor one = torch::ones({1, 1}, torch::TensorOptions(device).dtype(dtype));
    (void)one.mm(one);
    return true;
  } catch (const c10::Error&) {
    return false;
  }
}

// How torch.autocast treats the op a kind stands for (its CUDA op lists).
enum class AutocastRule { half, fp32, as_input };

AutocastRule autocast_rule(model::LayerKind kind) {
  using K = model::LayerKind;
  switch (kind) {
    case K::linear:
    case K::conv2d:
    case K::attention_scores:
    case K::attention_context:
    case K::fused_attention:                     // scaled_dot_product_attention is in autocast's lower-precision list
    case K::lm_head: return AutocastRule::half;  // its log-probabilities are fp32 regardless
    case K::layernorm:
    case K::rmsnorm:
    case K::softmax:
    case K::cross_entropy:
    // Lookups and additions of fp32 tables: the residual stream stays fp32.
    case K::embedding:
    case K::position:
    case K::class_token: return AutocastRule::fp32;
    case K::maxpool:
    case K::avgpool:
    case K::batchnorm:
    case K::gelu:
    case K::silu:
    case K::relu:
    case K::tanh:
    case K::sigmoid:
    case K::dropout:
    case K::mul:
    case K::clamped_swiglu:
    case K::rotary:
    case K::module: return AutocastRule::as_input;  // an imported network trains in fp32 (session.h)
  }
  TORCH_CHECK(false, "unknown layer kind");
}

}  // namespace

Precision resolve_precision(const std::string& name, const torch::Device& device) {
  Precision p;
  if (name == "fp32") return p;
  if (name == "bf16" || name == "amp-bf16" || model::is_fp8_precision(name)) {
    p.dtype = torch::kBFloat16;
  } else if (name == "amp-fp16") {
    p.dtype = torch::kHalf;
  } else {
    throw InputError("precision " + name +
                     ": expected fp32, bf16, amp-bf16, amp-fp16, fp8-tensorwise, fp8-rowwise or fp8-delayed");
  }
  if (!has_matmul(p.dtype, device)) {
    throw InputError("precision " + name + ": this LibTorch has no " + std::string(c10::toString(p.dtype)) +
                     " matrix multiply on " + device.str() + "; use amp-bf16 (the same bytes) or a CUDA device");
  }
  p.fp8 = model::fp8_recipe_of(name);
  p.autocast = name.rfind("amp-", 0) == 0 || p.fp8 != model::Fp8Recipe::none;
  return p;
}

LayerPrecision layer_precision(model::LayerKind kind, const Precision& precision) {
  if (!precision.autocast) return {precision.dtype, false};
  switch (autocast_rule(kind)) {
    case AutocastRule::half: return {precision.dtype, true};
    case AutocastRule::fp32: return {torch::kFloat, true};
    case AutocastRule::as_input: break;
  }
  return {precision.dtype, false};
}

}  // namespace papaya::executor
