#include "executor/layers/loss.h"

#include "executor/moms/functions.h"

namespace papaya::executor {

CrossEntropy::CrossEntropy() : Layer(LayerKind::cross_entropy, {{"logprobs", SlotKind::activation}}) {}

torch::Tensor CrossEntropy::forward(torch::Tensor logits, torch::Tensor target) {
  Scope scope(*this, {&logits});
  if (uses_moms()) return scope.finish(moms::cross_entropy(*this, logits, target));
  const torch::Tensor logprobs = torch::log_softmax(logits.to(torch::kFloat), -1);
  scope.saved("logprobs", logprobs);
  return scope.finish(torch::nll_loss(logprobs, target));
}

LMHead::LMHead(torch::Tensor tied_weight)
    : Layer(LayerKind::lm_head, {{"input", SlotKind::activation}, {"logprobs", SlotKind::activation}}),
      weight(std::move(tied_weight)) {}

LMHead::LMHead(int64_t vocab, int64_t dim)
    : Layer(LayerKind::lm_head, {{"input", SlotKind::activation}, {"logprobs", SlotKind::activation}}) {
  weight = register_parameter("weight", torch::randn({vocab, dim}) * 0.02);
}

torch::Tensor LMHead::forward(torch::Tensor x, torch::Tensor target) {
  Scope scope(*this, {&x});
  if (uses_moms()) return scope.finish(moms::lm_head(*this, x, weight, target));
  scope.saved("input", x);
  const torch::Tensor logits = torch::linear(x, cast(weight));
  const torch::Tensor logprobs = torch::log_softmax(logits.to(torch::kFloat), -1);
  scope.saved("logprobs", logprobs);
  return scope.finish(torch::nll_loss(logprobs.flatten(0, 1), target.flatten()));
}

}  // namespace papaya::executor
