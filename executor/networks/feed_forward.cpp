#include "executor/networks/feed_forward.h"

namespace papaya::executor {

FeedForward::FeedForward(const model::TransformerConfig& c, int64_t hidden, bool bias, const std::string& activation,
                         double dropout, bool weighted_output) {
  const bool swiglu = activation == "swiglu";
  fc1 = Projection(*this, "fc1", c.d_model, hidden, bias, c, swiglu ? "gate" : "fc1");
  act = register_module("act", std::make_shared<Activation>(swiglu ? "silu" : activation));
  if (swiglu) {
    up = Projection(*this, "up", c.d_model, hidden, bias, c, "up");
    gate = register_module("gate", std::make_shared<Mul>());
  }
  fc2 = Projection(*this, "fc2", hidden, c.d_model, bias, c, swiglu ? "down" : "fc2");
  if (weighted_output) weighted = register_module("weighted", std::make_shared<Mul>());
  if (dropout > 0) drop = register_module("drop", std::make_shared<Dropout>(dropout));
}

torch::Tensor FeedForward::forward(const torch::Tensor& x, const torch::Tensor& weight) {
  torch::Tensor h = act->forward(fc1.forward(x));
  if (gate) h = gate->forward(h, up.forward(x));
  h = fc2.forward(h);
  if (weighted) h = weighted->forward(h, weight);
  return drop ? drop->forward(std::move(h)) : h;
}

}  // namespace papaya::executor
