#include "executor/layers/attention.h"

#include <cmath>
#include <limits>

#include "executor/moms/functions.h"

namespace papaya::executor {

torch::Tensor by_kv_group(const torch::Tensor& t, int64_t kv_heads) { return t.reshape({t.size(0), kv_heads, -1, t.size(-1)}); }

AttentionScores::AttentionScores(int64_t head_dim, bool causal, std::shared_ptr<SequenceTables> tables)
    : Layer(LayerKind::attention_scores, {{"q", SlotKind::activation}, {"k", SlotKind::activation}}),
      scale(1.0 / std::sqrt(static_cast<double>(head_dim))),
      causal(causal),
      tables_(std::move(tables)) {}

torch::Tensor AttentionScores::forward(torch::Tensor q, torch::Tensor k) {
  Scope scope(*this, {&q, &k});
  if (uses_moms()) return scope.finish(moms::attention_scores(*this, q, k));
  scope.saved("q", q);
  scope.saved("k", k);
  torch::Tensor scores =
      torch::matmul(by_kv_group(q, k.size(1)), k.transpose(-2, -1)).view({q.size(0), q.size(1), q.size(2), k.size(2)}) * scale;
  if (causal) scores = scores.masked_fill(causal_mask(q.size(-2), q.device()), -std::numeric_limits<double>::infinity());
  return scope.finish(scores);
}

Softmax::Softmax() : Layer(LayerKind::softmax, {{"output", SlotKind::activation}}) {}

torch::Tensor Softmax::forward(torch::Tensor x) {
  Scope scope(*this, {&x});
  if (uses_moms()) return scope.finish(moms::softmax(*this, x));
  torch::Tensor y = torch::softmax(x, -1);
  scope.saved("output", y);
  return scope.finish(y);
}

AttentionContext::AttentionContext()
    : Layer(LayerKind::attention_context, {{"probs", SlotKind::activation}, {"v", SlotKind::activation}}) {}

torch::Tensor AttentionContext::forward(torch::Tensor probs, torch::Tensor v) {
  Scope scope(*this, {&probs, &v});
  if (uses_moms()) return scope.finish(moms::attention_context(*this, probs, v));
  scope.saved("probs", probs);
  scope.saved("v", v);
  return scope.finish(
      torch::matmul(by_kv_group(probs, v.size(1)), v).view({probs.size(0), probs.size(1), probs.size(2), v.size(3)}));
}

}  // namespace papaya::executor
