#pragma once
// The kinds of layer the executor builds networks from, and what papaya knows
// of each without running it: the tensors its native (keep) path saves, the
// strategies that can apply to them and the shape of its FLOPs formula. Files
// (profiles, fitted models) write a kind as its name ("linear", "lm_head").
#include <string>
#include <vector>

#include "model/slot_kind.h"

namespace papaya::model {

enum class LayerKind {
  linear,
  embedding,
  position,
  class_token,
  conv2d,
  maxpool,
  avgpool,
  batchnorm,
  layernorm,
  rmsnorm,
  gelu,
  silu,
  relu,
  tanh,
  sigmoid,  // DeepSeek-V3's expert scores; saves its output
  dropout,
  mul,
  // GPT-OSS's experts' gated unit of two inputs, gate and up: (clamp(up,
  // ±limit) + 1)·c·sigmoid(alpha·c), c = min(gate, limit); saves both.
  clamped_swiglu,
  rotary,
  attention_scores,
  softmax,
  attention_context,
  // Attention fused into one layer (FlashAttention): saves q, k, v, its
  // output and a log-sum-exp per query row and head, no scores.
  fused_attention,
  cross_entropy,
  lm_head,
  // A module of a network papaya did not build (executor/torchscript/): its
  // slots are the tensors it was seen to save, its FLOPs unknown (0).
  module,
};

// Every kind, in the order above.
std::vector<LayerKind> layer_kinds();

const char* to_string(LayerKind kind);
// Throws InputError "<where>: unknown layer kind '<text>'".
LayerKind layer_kind_from_string(const std::string& text, const std::string& where);

// How a kind's forward FLOPs follow from the tensors of one call (profiler/
// layer_cost.cpp evaluates them). N is the output's elements; a multiply-add
// counts 2, every other operation (exp, sqrt, a comparison) 1.
enum class FlopsShape {
  per_output,   // flops_per_output·N
  per_input,    // flops_per_output·(the input's elements)
  matmul,       // 2·in·N + flops_per_output·N (+N with a bias), in = the input's last dimension
  convolution,  // 2·(C_in·k_h·k_w)·N (+N with a bias)
  logits,       // 2·d·L + flops_per_output·L, L = the logits' elements (the saved log-probabilities')
  pooling,      // k²·N, k = the pooling window
  attention,    // (4·d + flops_per_output)·P, P the (query, key) pairs attended (about half of all when causal), d the head
                // dimension
};

struct SlotTraits {
  const char* name;  // "input", "output", "mask", "q", ...
  SlotKind kind;
};

struct LayerKindTraits {
  std::vector<SlotTraits> slots;  // what its native path saves for backward, in order
  // Its input can be stored inverted: backward differentiates from the output
  // (and a branch bit) that the next layer saves anyway (GELU, SiLU).
  bool invertible_input = false;
  // Its tensors are attention tensors: quantization groups may follow heads.
  bool attention = false;
  // Its slot "logprobs" holds log-probabilities, which backward exponentiates:
  // rounding them biases the gradient.
  bool saves_logprobs = false;
  // ... and it can recompute them in backward instead of keeping them (the LM head).
  bool recomputes_logprobs = false;
  FlopsShape flops = FlopsShape::per_output;
  double flops_per_output = 0;
  // Its MOM path stores its slots before it computes its output: a codec's
  // scratch is gone by the time the output is allocated.
  bool stores_before_output = false;
  // Its backward is papaya's, which can run again on a tensor requantized to
  // estimate the tensor's sensitivity (adaptive bits, GACT); an imported
  // module's is LibTorch's own.
  bool estimates_sensitivity = true;
  // Its backward's FLOPs over its forward's: a product's two (each
  // operand's gradient); fused attention's 2.5 (its scores made again, then
  // four products).
  double backward_flops_ratio = 2;
};

const LayerKindTraits& traits(LayerKind kind);

// Whether `slot` of a `kind` layer is log-probabilities.
bool holds_logprobs(LayerKind kind, const std::string& slot);

}  // namespace papaya::model
