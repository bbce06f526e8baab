#pragma once
// Fused attention in blocks, FlashAttention-2's algorithm (Dao, 2023) in
// ATen ops: out = softmax(q k^T scale + causal mask) v without ever holding
// a tokens x tokens tensor (causal, within a sliding window where one is
// given). Forward runs each block of query rows over the
// blocks of keys with an online softmax (a running row maximum and sum) and
// keeps, beside its output, one fp32 log-sum-exp per query row and head;
// backward makes each block's probabilities again from q, k and that
// log-sum-exp, with the row sums of dO o O. Blocks above the diagonal are
// skipped when causal. Dropout on the probabilities keeps no mask: each
// weight's keep-or-drop is drawn from a counter-based generator (Philox) at
// its row and column, so backward draws the same mask again from the seed.
//
// Each step's scratch is a block of query rows by a block of keys (a fixed
// number of rows by a quarter of the keys): it grows linearly with the
// tokens, so that the model fits a network's bytes at any length from short
// ones (the smallest profiled is 16 tokens, one block of rows).
#include <ATen/ATen.h>

#include <cstdint>

namespace papaya::executor {

struct BlockAttention {
  double scale = 1;
  bool causal = false;
  double dropout = 0;  // the probability of dropping an attention weight
  uint64_t seed = 0;   // the dropout mask's Philox key, drawn once a call
  // Causal, a sliding window: row i sees keys i - window + 1 to i, and the
  // blocks of keys wholly before them are skipped; 0: every key up to i.
  int64_t window = 0;
  // Scores soft-capped, cap·tanh(score / cap), before the mask and the
  // softmax (Gemma 2's attention logits); 0: not capped.
  double softcap = 0;
  // Attention sinks (GPT-OSS): one logit a head, fp32 (heads), that joins
  // each row's softmax with no value, so that a row may attend to nothing;
  // undefined: none.
  at::Tensor sinks;
};

// Query rows a block holds.
constexpr int64_t attention_query_block = 16;
// The keys of a row are cut into this many blocks.
constexpr int64_t attention_key_blocks = 4;

struct AttentionOutput {
  at::Tensor out;  // (batch, heads, tokens, head_dim), a view of a (batch, tokens, heads, head_dim) tensor
  at::Tensor lse;  // (batch, heads, tokens), fp32
};

// q and k (batch, heads or kv_heads, tokens or keys, head_dim); v (batch,
// kv_heads, keys, value_dim; value_dim head_dim or another) with kv_heads dividing heads, each serving consecutive query
// heads (grouped-query attention). The output is laid out token-major, as
// FlashAttention's, so that heads concatenated per token are a view of it.
AttentionOutput block_attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const BlockAttention& how);

struct AttentionGradients {
  at::Tensor q, k, v;
  at::Tensor sinks;  // fp32 (heads), where the call has sinks
};

// The gradients of q, k and v from the output's gradient and what forward kept.
AttentionGradients block_attention_backward(const at::Tensor& grad_out, const at::Tensor& q, const at::Tensor& k,
                                            const at::Tensor& v, const at::Tensor& out, const at::Tensor& lse,
                                            const BlockAttention& how);

// The dropout mask of rows [first_row, first_row + rows) and keys
// [first_key, first_key + keys) of every head: (batch, heads, rows, keys)
// fp32, 0 where dropped, 1 / (1 - dropout) where kept. The same for the same
// seed whatever the blocks.
at::Tensor attention_dropout_mask(const BlockAttention& how, int64_t batch, int64_t heads, int64_t tokens, int64_t first_row,
                                  int64_t rows, int64_t first_key, int64_t keys);

}  // namespace papaya::executor
