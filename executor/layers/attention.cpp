#include "executor/layers/attention.h"

#include <cmath>
#include <limits>

#include "executor/storage/saved.h"

namespace papaya::executor {

// The MOM-aware attention layers: scores, softmax, context.
namespace moms {
namespace {

using torch::autograd::Function;

struct ScoresFunction : Function<ScoresFunction> {
  static at::Tensor forward(AutogradContext* ctx, AttentionScores* layer, const at::Tensor& q, const at::Tensor& k) {
    stash(ctx, {store_operand(*layer, "q", q), store_operand(*layer, "k", k)});
    ctx->saved_data["scale"] = layer->scale;
    ctx->saved_data["kv"] = k.size(1);
    at::Tensor scores =
        at::matmul(by_kv_group(q, k.size(1)), k.transpose(-2, -1)).view({q.size(0), q.size(1), q.size(2), k.size(2)}) *
        layer->scale;
    if (!layer->causal) return scores;
    const at::Tensor& mask = layer->causal_mask(q.size(-2), q.device());
    ctx->save_for_backward({mask});
    return scores.masked_fill(mask, -std::numeric_limits<double>::infinity());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const Unstashed saved = unstash(ctx);
    const double scale = ctx->saved_data["scale"].toDouble();
    const int64_t kv = ctx->saved_data["kv"].toInt();
    const auto kept = ctx->get_saved_variables();
    // One scores-sized temporary, as the native backward takes: scaled, then
    // masked in place; and k's gradient as (q^T g)^T, which reads g as it is
    // where g^T q would copy it transposed. Each operand's gradient reads the
    // other (a frozen one's partner is not kept).
    at::Tensor g = grad[0] * scale;
    if (!kept.empty()) g.masked_fill_(kept[0], 0);
    const auto gradients = [&](const std::vector<at::Tensor>& s) -> variable_list {
      const at::Tensor grouped = by_kv_group(g, kv);
      return {s[1].defined() ? grouped.matmul(s[1]).view({g.size(0), g.size(1), g.size(2), s[1].size(-1)}) : at::Tensor(),
              s[0].defined() ? by_kv_group(s[0], kv).transpose(-2, -1).matmul(grouped).transpose(-2, -1) : at::Tensor()};
    };
    const variable_list out = gradients(saved.tensors);
    saved.estimate_sensitivity(gradients, out);
    return {at::Tensor(), out[0], out[1]};
  }
};

struct SoftmaxFunction : Function<SoftmaxFunction> {
  static at::Tensor forward(AutogradContext* ctx, const Softmax* layer, const at::Tensor& x) {
    const at::Tensor y = at::softmax(x, -1);
    stash(ctx, {store_slot(*layer, 0, y)});
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const Unstashed saved = unstash(ctx);
    const auto gradients = [&](const std::vector<at::Tensor>& s) -> variable_list {
      return {at::_softmax_backward_data(grad[0], s[0], -1, s[0].scalar_type())};
    };
    const variable_list out = gradients(saved.tensors);
    saved.estimate_sensitivity(gradients, out);
    return {at::Tensor(), out[0]};
  }
};

struct ContextFunction : Function<ContextFunction> {
  static at::Tensor forward(AutogradContext* ctx, const AttentionContext* layer, const at::Tensor& probs, const at::Tensor& v) {
    stash(ctx, {store_operand(*layer, "probs", probs), store_operand(*layer, "v", v)});
    ctx->saved_data["kv"] = v.size(1);
    return at::matmul(by_kv_group(probs, v.size(1)), v).view({probs.size(0), probs.size(1), probs.size(2), v.size(3)});
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const Unstashed saved = unstash(ctx);
    const at::Tensor& g = grad[0];
    const int64_t kv = ctx->saved_data["kv"].toInt();
    const auto gradients = [&](const std::vector<at::Tensor>& s) -> variable_list {
      const at::Tensor grouped = by_kv_group(g, kv);
      return {s[1].defined() ? grouped.matmul(s[1].transpose(-2, -1)).view({g.size(0), g.size(1), g.size(2), s[1].size(2)})
                             : at::Tensor(),
              s[0].defined() ? by_kv_group(s[0], kv).transpose(-2, -1).matmul(grouped) : at::Tensor()};
    };
    const variable_list out = gradients(saved.tensors);
    saved.estimate_sensitivity(gradients, out);
    return {at::Tensor(), out[0], out[1]};
  }
};

torch::Tensor attention_scores(AttentionScores& layer, const torch::Tensor& q, const torch::Tensor& k) {
  return ScoresFunction::apply(&layer, q, k);
}

torch::Tensor softmax(const Softmax& layer, const torch::Tensor& x) { return SoftmaxFunction::apply(&layer, x); }

torch::Tensor attention_context(const AttentionContext& layer, const torch::Tensor& probs, const torch::Tensor& v) {
  return ContextFunction::apply(&layer, probs, v);
}

}  // namespace
}  // namespace moms

torch::Tensor by_kv_group(const torch::Tensor& t, int64_t kv_heads) { return t.reshape({t.size(0), kv_heads, -1, t.size(-1)}); }

AttentionScores::AttentionScores(int64_t head_dim, bool causal, std::shared_ptr<SequenceTables> tables)
    : Layer(LayerKind::attention_scores, {{"q", SlotKind::activation}, {"k", SlotKind::activation}}),
      scale(1.0 / std::sqrt(static_cast<double>(head_dim))),
      causal(causal),
      tables_(std::move(tables)) {
  set_product_of_inputs();
}

torch::Tensor AttentionScores::forward(torch::Tensor q, torch::Tensor k) {
  Scope scope(*this, {&q, &k});
  if (uses_moms()) return scope.finish(moms::attention_scores(*this, q, k));
  if (has_slot("q")) scope.saved("q", q);
  if (has_slot("k")) scope.saved("k", k);
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
    : Layer(LayerKind::attention_context, {{"probs", SlotKind::activation}, {"v", SlotKind::activation}}) {
  set_product_of_inputs();
}

torch::Tensor AttentionContext::forward(torch::Tensor probs, torch::Tensor v) {
  Scope scope(*this, {&probs, &v});
  if (uses_moms()) return scope.finish(moms::attention_context(*this, probs, v));
  if (has_slot("probs")) scope.saved("probs", probs);
  if (has_slot("v")) scope.saved("v", v);
  return scope.finish(
      torch::matmul(by_kv_group(probs, v.size(1)), v).view({probs.size(0), probs.size(1), probs.size(2), v.size(3)}));
}

}  // namespace papaya::executor
