#pragma once
// Fused attention, as transformers train today (PyTorch's
// scaled_dot_product_attention, FlashAttention): one layer from q, k and v to
// the context, never holding the tokens x tokens scores. It saves q, k and v
// (k and v at their own heads), its output and one fp32 log-sum-exp per
// query row and head: activation memory linear in the tokens. Backward makes
// the probabilities again, block by block (executor/layers/attention_blocks.h).
// Dropout on the attention weights keeps no mask: it is drawn again from the
// call's seed.
//
// There is no native kernel to fall back on (LibTorch 1.13 has none): every
// plan runs papaya's autograd Function, which under keep stores its slots as
// they are and reports them as a native path does.
#include "executor/layer.h"

namespace papaya::executor {

class FusedAttention : public Layer {
 public:
  // `window`: causal, each query sees its last `window` keys (a sliding
  // window: Mistral, Gemma); 0: every key up to its own.
  FusedAttention(int64_t head_dim, bool causal, double dropout, int64_t window = 0);
  // q (batch, heads, tokens, head_dim), k and v (batch, kv_heads, tokens,
  // head_dim): the context (batch, heads, tokens, head_dim), a view of a
  // token-major tensor (heads concatenated per token are a view of it).
  torch::Tensor forward(torch::Tensor q, torch::Tensor k, torch::Tensor v);
  torch::Tensor run(const std::vector<torch::Tensor>& in, const Batch&) override { return forward(in.at(0), in.at(1), in.at(2)); }
  bool draws_random() const override { return dropout > 0 && is_training(); }

  double scale;
  bool causal;
  double dropout;  // on the attention weights, in training
  int64_t window;
  double softcap = 0;  // scores capped at ±softcap (cap·tanh(score / cap)); 0: not capped
  // Attention sinks (GPT-OSS): a learned logit a head that joins each row's
  // softmax with no value (a parameter, fp32); undefined: none.
  torch::Tensor sinks;
  void add_sinks(int64_t heads);
};

}  // namespace papaya::executor
