#include "executor/networks/lora.h"

#include <algorithm>

namespace papaya::executor {

Projection::Projection(torch::nn::Module& parent, const std::string& name, int64_t in, int64_t out, bool bias,
                       const model::TransformerConfig& config, const std::string& role) {
  const auto& lora = config.lora;
  base = parent.register_module(name,
                                std::make_shared<Linear>(in, out, bias, lora ? lora->base_weights : model::WeightFormat::fp32));
  if (!lora || std::find(lora->targets.begin(), lora->targets.end(), role) == lora->targets.end()) return;
  if (lora->dropout > 0) drop_ = parent.register_module(name + "_lora_drop", std::make_shared<Dropout>(lora->dropout));
  a_ = parent.register_module(name + "_lora_a", std::make_shared<Linear>(in, lora->rank, false));
  b_ = parent.register_module(name + "_lora_b", std::make_shared<Linear>(lora->rank, out, false));
  b_->output_scale = lora->scale();
  torch::NoGradGuard no_grad;
  b_->weight.zero_();
}

torch::Tensor Projection::forward(const torch::Tensor& x) const {
  torch::Tensor y = base->forward(x);
  if (!a_) return y;
  return y + b_->forward(a_->forward(drop_ ? drop_->forward(x) : x));
}

}  // namespace papaya::executor
