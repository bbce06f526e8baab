#include "executor/networks/feed_forward.h"

namespace papaya::executor {

FeedForward::FeedForward(const model::TransformerConfig& c, int64_t hidden, bool bias, const std::string& activation,
                         double dropout, bool weighted_output) {
  const bool clamped = activation == "clamped_swiglu";
  const bool gated = activation == "swiglu" || activation == "geglu" || clamped, joined = gated && c.fused_gate_up;
  if (joined) {
    fc1 = Projection(*this, "fc1", c.d_model, 2 * hidden, bias, c, "gate_up");
  } else {
    fc1 = Projection(*this, "fc1", c.d_model, hidden, bias, c, gated ? "gate" : "fc1");
  }
  if (clamped) {  // GPT-OSS's experts: their mixture's alpha and limit
    up = Projection(*this, "up", c.d_model, hidden, bias, c, "up");
    glu = register_module("glu", std::make_shared<ClampedSwiGlu>(c.moe->swiglu_alpha, c.moe->swiglu_limit));
  } else {
    const std::string gate_activation = activation == "swiglu" ? "silu" : activation == "geglu" ? "gelu" : activation;
    act = register_module("act", std::make_shared<Activation>(gate_activation));
    if (gated) {
      if (!joined) up = Projection(*this, "up", c.d_model, hidden, bias, c, "up");
      gate = register_module("gate", std::make_shared<Mul>());
    }
  }
  fc2 = Projection(*this, "fc2", hidden, c.d_model, bias, c, gated ? "down" : "fc2");
  if (weighted_output) weighted = register_module("weighted", std::make_shared<Mul>());
  if (dropout > 0) drop = register_module("drop", std::make_shared<Dropout>(dropout));
}

torch::Tensor FeedForward::forward(const torch::Tensor& input, const torch::Tensor& weight) {
  // With the tokens split, the projections gather them (Linear::gathers_tokens).
  const torch::Tensor x = group_ && !group_->splits_sequence() ? group_->enter(input) : input;
  torch::Tensor h;
  if (gate && !up) {
    // Joined: the first half the gate's, the second the up's, each its own
    // tensor so that a plan stores each slot alone (HuggingFace's chunk
    // keeps views of the whole; what is held is the same: 3 halves).
    const torch::Tensor both = fc1.forward(x);
    const int64_t half = both.size(-1) / 2;
    h = gate->forward(act->forward(both.narrow(-1, 0, half).contiguous()), both.narrow(-1, half, half).contiguous());
  } else if (glu) {
    h = fc1.forward(x);
    h = glu->forward(std::move(h), up.forward(x));
  } else {
    h = act->forward(fc1.forward(x));
    if (gate) h = gate->forward(h, up.forward(x));
  }
  h = fc2.forward(h);
  if (group_) h = group_->sum(h);
  if (weighted) h = weighted->forward(h, weight);
  return drop ? drop->forward(std::move(h)) : h;
}

void FeedForward::split(const std::shared_ptr<TensorGroup>& group) {
  const int64_t share = fc2.base->weight.size(1) / group->size(), first = share * group->rank();
  const torch::NoGradGuard no_grad;
  for (const Projection* column : {&fc1, &up}) {
    if (!*column) continue;
    column->base->weight.set_data(column->base->weight.narrow(0, first, share).clone());
    if (column->base->bias.defined()) column->base->bias.set_data(column->base->bias.narrow(0, first, share).clone());
    if (group->splits_sequence()) column->base->gathers_tokens = group;
  }
  fc2.base->weight.set_data(fc2.base->weight.narrow(1, first, share).contiguous());
  group_ = group;
}

}  // namespace papaya::executor
