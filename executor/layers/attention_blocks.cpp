#include "executor/layers/attention_blocks.h"

#include <ATen/core/PhiloxRNGEngine.h>

#include <algorithm>
#include <limits>

namespace papaya::executor {
namespace {

// The shapes of a call, with k's heads grouping q's.
struct Shape {
  int64_t batch, heads, tokens, kv_heads, group, keys, key_block;

  Shape(const at::Tensor& q, const at::Tensor& k)
      : batch(q.size(0)),
        heads(q.size(1)),
        tokens(q.size(2)),
        kv_heads(k.size(1)),
        group(q.size(1) / k.size(1)),
        keys(k.size(2)),
        key_block((k.size(2) + attention_key_blocks - 1) / attention_key_blocks) {}

  // The keys rows [first, first + rows) see: all, or up to the last row's own when causal.
  int64_t keys_seen(bool causal, int64_t first, int64_t rows) const { return causal ? std::min(keys, first + rows) : keys; }
  // The first block of keys rows [first, ...) see: the one that holds the
  // first row's earliest key within the window, or the first.
  int64_t first_key_block(const BlockAttention& how, int64_t first) const {
    if (!how.causal || how.window <= 0) return 0;
    return std::max<int64_t>(0, first - how.window + 1) / key_block * key_block;
  }
};

// A running maximum where a row has seen no key yet (-inf) taken as 0, so
// that exponentials against it are 0, never NaN.
at::Tensor finite_or_zero(const at::Tensor& row_max) { return at::where(at::isinf(row_max), at::zeros_like(row_max), row_max); }

// Rows [first, first + rows) of every head of `t` (batch, heads, tokens, d),
// fp32, with each k/v head's group of query heads stacked along the rows:
// (batch, kv_heads, group·rows, d), so that one product with the group's k
// or v serves them all.
at::Tensor query_rows(const at::Tensor& t, const Shape& s, int64_t first, int64_t rows) {
  return t.view({s.batch, s.kv_heads, s.group, s.tokens, t.size(3)})
      .narrow(3, first, rows)
      .to(at::kFloat)
      .reshape({s.batch, s.kv_heads, s.group * rows, t.size(3)});
}

// The same rows of a (batch, heads, tokens) tensor, as (batch, kv_heads, group·rows).
at::Tensor row_values(const at::Tensor& t, const Shape& s, int64_t first, int64_t rows) {
  return t.view({s.batch, s.kv_heads, s.group, s.tokens}).narrow(3, first, rows).reshape({s.batch, s.kv_heads, s.group * rows});
}

// Writes `block` (batch, kv_heads, group·rows, ...) back into rows
// [first, first + rows) of `t`, laid out as query_rows reads them.
void write_rows(const at::Tensor& t, const at::Tensor& block, const Shape& s, int64_t first, int64_t rows) {
  std::vector<int64_t> grouped{s.batch, s.kv_heads, s.group, s.tokens};
  std::vector<int64_t> of_block{s.batch, s.kv_heads, s.group, rows};
  if (t.dim() == 4) {
    grouped.push_back(t.size(3));
    of_block.push_back(t.size(3));
  }
  t.view(grouped).narrow(3, first, rows).copy_(block.view(of_block));
}

// Scaled scores of a block of rows against keys [first_key, first_key +
// keys), soft-capped where the call caps them, the keys past each row's own
// (and before its window) set to -inf when causal. `slope`, where given and
// the scores are capped: the cap's derivative at each score, 1 - tanh^2
// (taken before the mask, so that it is finite everywhere).
at::Tensor block_scores(const at::Tensor& q_rows, const at::Tensor& k_block, const Shape& s, const BlockAttention& how,
                        int64_t first_row, int64_t rows, int64_t first_key, at::Tensor* slope = nullptr) {
  at::Tensor scores = at::matmul(q_rows, k_block.transpose(-2, -1)).mul_(how.scale);
  if (how.softcap > 0) {
    scores.div_(how.softcap).tanh_();
    if (slope) *slope = 1 - scores.square();
    scores.mul_(how.softcap);
  }
  const int64_t keys = k_block.size(2);
  const bool past_row = first_key + keys - 1 > first_row;
  const bool before_window = how.window > 0 && first_row + rows - 1 - first_key >= how.window;
  if (how.causal && (past_row || before_window)) {
    const at::Tensor row = at::arange(first_row, first_row + rows, scores.options().dtype(at::kLong)).unsqueeze(1);
    const at::Tensor key = at::arange(first_key, first_key + keys, scores.options().dtype(at::kLong)).unsqueeze(0);
    at::Tensor hidden = key > row;
    if (before_window) hidden = hidden.logical_or(row - key >= how.window);
    scores.view({s.batch, s.kv_heads, s.group, rows, keys}).masked_fill_(hidden, -std::numeric_limits<double>::infinity());
  }
  return scores;
}

// The sinks' logits laid out as a block of rows' values: (1, kv_heads, group·rows).
at::Tensor sink_rows(const at::Tensor& sinks, const Shape& s, int64_t rows) {
  return sinks.to(at::kFloat)
      .view({1, s.kv_heads, s.group, 1})
      .expand({1, s.kv_heads, s.group, rows})
      .reshape({1, s.kv_heads, s.group * rows});
}

// Dropout's mask for a block of rows (as block_scores lays them out), or undefined without dropout.
at::Tensor block_mask(const BlockAttention& how, const Shape& s, int64_t first_row, int64_t rows, int64_t first_key, int64_t keys,
                      const at::Device& device) {
  if (how.dropout <= 0) return {};
  return attention_dropout_mask(how, s.batch, s.heads, s.tokens, first_row, rows, first_key, keys)
      .view({s.batch, s.kv_heads, s.group * rows, keys})
      .to(device);
}

}  // namespace

at::Tensor attention_dropout_mask(const BlockAttention& how, int64_t batch, int64_t heads, int64_t tokens, int64_t first_row,
                                  int64_t rows, int64_t first_key, int64_t keys) {
  at::Tensor mask = at::empty({batch, heads, rows, keys}, at::TensorOptions().dtype(at::kFloat));
  float* out = mask.data_ptr<float>();
  const float kept = static_cast<float>(1.0 / (1.0 - how.dropout));
  const double bound = how.dropout * 4294967296.0;  // a draw below drops: probability `dropout`
  for (int64_t bh = 0; bh < batch * heads; ++bh) {
    for (int64_t i = 0; i < rows; ++i) {
      // A row's own stream, four draws a counter: the draw of key j is the
      // (j % 4)-th of counter j / 4.
      at::philox_engine draw(how.seed, static_cast<uint64_t>(bh * tokens + first_row + i), static_cast<uint64_t>(first_key / 4));
      for (int64_t skip = 0; skip < first_key % 4; ++skip) draw();
      for (int64_t j = 0; j < keys; ++j) *out++ = static_cast<double>(draw()) < bound ? 0.0f : kept;
    }
  }
  return mask;
}

AttentionOutput block_attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                        const BlockAttention& how) {
  const Shape s(q, k);
  // Each head's output has v's dimensions, which may be other than q's and k's (latent attention's).
  const at::Tensor out = at::empty({s.batch, s.tokens, s.heads, v.size(3)}, q.options()).permute({0, 2, 1, 3});
  const at::Tensor lse = at::empty({s.batch, s.heads, s.tokens}, q.options().dtype(at::kFloat));
  for (int64_t first = 0; first < s.tokens; first += attention_query_block) {
    const int64_t rows = std::min(attention_query_block, s.tokens - first);
    const at::Tensor q_rows = query_rows(q, s, first, rows);
    at::Tensor row_max, row_sum, acc;  // the online softmax's running maximum and sum; the weighted values
    const int64_t seen = s.keys_seen(how.causal, first, rows);
    for (int64_t first_key = s.first_key_block(how, first); first_key < seen; first_key += s.key_block) {
      const int64_t keys = std::min(s.key_block, seen - first_key);
      at::Tensor p = block_scores(q_rows, k.narrow(2, first_key, keys).to(at::kFloat), s, how, first, rows, first_key);
      const at::Tensor block_max = std::get<0>(p.max(-1));
      // Without a window every row sees key 0 in the first block; with one,
      // a row may see none of a block (its maximum -inf until it does).
      const at::Tensor new_max = row_max.defined() ? at::maximum(row_max, block_max) : block_max;
      const at::Tensor reference = how.window > 0 ? finite_or_zero(new_max) : new_max;
      p.sub_(reference.unsqueeze(-1)).exp_();
      const at::Tensor mask = block_mask(how, s, first, rows, first_key, keys, q.device());
      if (row_max.defined()) {
        const at::Tensor rescale = (row_max - reference).exp_();
        row_sum.mul_(rescale).add_(p.sum(-1));
        if (mask.defined()) p.mul_(mask);
        acc.mul_(rescale.unsqueeze(-1)).add_(at::matmul(p, v.narrow(2, first_key, keys).to(at::kFloat)));
      } else {
        row_sum = p.sum(-1);
        if (mask.defined()) p.mul_(mask);
        acc = at::matmul(p, v.narrow(2, first_key, keys).to(at::kFloat));
      }
      row_max = new_max;
    }
    acc.div_(row_sum.unsqueeze(-1));
    at::Tensor row_lse = row_max.add_(row_sum.log_());
    if (how.sinks.defined()) {
      // The sink joins the softmax: the row's weights shrink by exp(lse - lse with the sink).
      const at::Tensor with_sink = at::logaddexp(row_lse, sink_rows(how.sinks, s, rows));
      acc.mul_((row_lse - with_sink).exp_().unsqueeze(-1));
      row_lse = with_sink;
    }
    write_rows(out, acc, s, first, rows);
    write_rows(lse, row_lse, s, first, rows);
  }
  return {out, lse};
}

AttentionGradients block_attention_backward(const at::Tensor& grad_out, const at::Tensor& q, const at::Tensor& k,
                                            const at::Tensor& v, const at::Tensor& out, const at::Tensor& lse,
                                            const BlockAttention& how) {
  const Shape s(q, k);
  const at::TensorOptions fp32 = q.options().dtype(at::kFloat);
  // k's and v's gradients sum over every block of rows (and a group's query heads): fp32 throughout.
  at::Tensor grad_q = at::empty(q.sizes(), fp32);
  at::Tensor grad_k = at::zeros(k.sizes(), fp32), grad_v = at::zeros(v.sizes(), fp32);
  // A sink's gradient: -sum over rows of its weight exp(sink - lse) times D (it has no value).
  at::Tensor grad_sinks = how.sinks.defined() ? at::zeros({s.kv_heads, s.group}, fp32) : at::Tensor();
  for (int64_t first = 0; first < s.tokens; first += attention_query_block) {
    const int64_t rows = std::min(attention_query_block, s.tokens - first);
    const at::Tensor q_rows = query_rows(q, s, first, rows), g_rows = query_rows(grad_out, s, first, rows);
    // FlashAttention-2's D: rowsum(dO o O), the probabilities' part of every score's gradient.
    const at::Tensor d = (g_rows * query_rows(out, s, first, rows)).sum(-1).unsqueeze(-1);
    const at::Tensor row_lse = row_values(lse, s, first, rows).unsqueeze(-1);
    if (grad_sinks.defined()) {
      const at::Tensor sink_weight = (sink_rows(how.sinks, s, rows) - row_lse.squeeze(-1)).exp_();
      grad_sinks.sub_((sink_weight * d.squeeze(-1)).view({s.batch, s.kv_heads, s.group, rows}).sum(at::IntArrayRef{0, 3}));
    }
    at::Tensor grad_rows = at::zeros_like(q_rows);
    const int64_t seen = s.keys_seen(how.causal, first, rows);
    for (int64_t first_key = s.first_key_block(how, first); first_key < seen; first_key += s.key_block) {
      const int64_t keys = std::min(s.key_block, seen - first_key);
      const at::Tensor k_block = k.narrow(2, first_key, keys).to(at::kFloat);
      const at::Tensor v_block = v.narrow(2, first_key, keys).to(at::kFloat);
      at::Tensor slope;  // where the scores are capped
      at::Tensor p = block_scores(q_rows, k_block, s, how, first, rows, first_key, &slope).sub_(row_lse).exp_();
      const at::Tensor mask = block_mask(how, s, first, rows, first_key, keys, q.device());
      at::Tensor grad_p = at::matmul(g_rows, v_block.transpose(-2, -1));
      if (mask.defined()) {
        grad_p.mul_(mask);
        grad_v.narrow(2, first_key, keys).add_(at::matmul((p * mask).transpose(-2, -1), g_rows));
      } else {
        grad_v.narrow(2, first_key, keys).add_(at::matmul(p.transpose(-2, -1), g_rows));
      }
      at::Tensor grad_scores = p.mul_(grad_p.sub_(d));
      if (slope.defined()) grad_scores.mul_(slope);
      grad_scores.mul_(how.scale);
      grad_rows.add_(at::matmul(grad_scores, k_block));
      grad_k.narrow(2, first_key, keys).add_(at::matmul(grad_scores.transpose(-2, -1), q_rows));
    }
    write_rows(grad_q, grad_rows, s, first, rows);
  }
  return {grad_q.to(q.scalar_type()), grad_k.to(k.scalar_type()), grad_v.to(v.scalar_type()),
          grad_sinks.defined() ? grad_sinks.view({s.heads}) : at::Tensor()};
}

}  // namespace papaya::executor
