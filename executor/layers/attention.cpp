#include "executor/layers/attention.h"

#include <cmath>
#include <limits>

namespace papaya::executor {

AttentionScores::AttentionScores(int64_t head_dim, bool causal)
    : Layer("attention_scores", {{"q", SlotKind::activation}, {"k", SlotKind::activation}}),
      scale(1.0 / std::sqrt(static_cast<double>(head_dim))),
      causal(causal) {}

torch::Tensor AttentionScores::forward(torch::Tensor q, torch::Tensor k) {
  Scope scope(*this, {&q, &k});
  scope.saved("q", q);
  scope.saved("k", k);
  torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) * scale;
  if (causal) {
    // One mask per layer, kept across steps (masked_fill's backward keeps it).
    const int64_t n = q.size(-2);
    if (!above_diagonal_.defined() || above_diagonal_.size(0) != n || above_diagonal_.device() != q.device()) {
      above_diagonal_ = torch::ones({n, n}, q.options().dtype(torch::kBool)).triu(1);
    }
    scores = scores.masked_fill(above_diagonal_, -std::numeric_limits<double>::infinity());
  }
  return scope.finish(scores);
}

Softmax::Softmax() : Layer("softmax", {{"output", SlotKind::activation}}) {}

torch::Tensor Softmax::forward(torch::Tensor x) {
  Scope scope(*this, {&x});
  torch::Tensor y = torch::softmax(x, -1);
  scope.saved("output", y);
  return scope.finish(y);
}

AttentionContext::AttentionContext()
    : Layer("attention_context", {{"probs", SlotKind::activation}, {"v", SlotKind::activation}}) {}

torch::Tensor AttentionContext::forward(torch::Tensor probs, torch::Tensor v) {
  Scope scope(*this, {&probs, &v});
  scope.saved("probs", probs);
  scope.saved("v", v);
  return scope.finish(torch::matmul(probs, v));
}

}  // namespace papaya::executor
