#pragma once
// The precision a network trains in: every activation in one type, or
// torch.autocast's per-op policy (matmuls in a half type; norms, softmax and
// losses in fp32; the rest in their input's type). Parameters, gradients and
// AdamW's state stay fp32 either way.
#include <torch/torch.h>

#include <string>

#include "model/fp8_recipe.h"
#include "model/layer_kind.h"

namespace papaya::executor {

struct Precision {
  torch::ScalarType dtype = torch::kFloat;  // of every activation; under autocast, of the matmuls
  bool autocast = false;
  // FP8 training: amp-bf16 with the linear layers the recipe converts
  // computing their products in FP8 (layers/fp8_linear.h).
  model::Fp8Recipe fp8 = model::Fp8Recipe::none;
};

// "fp32", "bf16", "amp-bf16", "amp-fp16", "fp8-tensorwise", "fp8-rowwise"
// or "fp8-delayed". Throws InputError for another name, or for a half type
// this LibTorch cannot multiply matrices in on `device` (LibTorch 1.13 has
// no fp16 matmul on a CPU).
Precision resolve_precision(const std::string& name, const torch::Device& device);

// The type a `kind` layer computes in under `precision`, and whether its
// forward casts its floating inputs to it first (autocast: the cast copy is
// then what the layer saves) or takes them in whatever type they come.
struct LayerPrecision {
  torch::ScalarType dtype;
  bool casts_inputs;
};
LayerPrecision layer_precision(model::LayerKind kind, const Precision& precision);

}  // namespace papaya::executor
