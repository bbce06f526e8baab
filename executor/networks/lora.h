#pragma once
// LoRA fine-tuning of papaya's transformers (model::LoraConfig): adapters
// beside the targeted projections, every other weight frozen.
#include <memory>
#include <string>

#include "executor/layers/dense.h"
#include "executor/layers/elementwise.h"
#include "executor/networks/network.h"

namespace papaya::executor {

// A transformer's linear projection of role `role` (q, k, v, qkv, o, gate,
// up, down, fc1, fc2): a Linear registered on `parent` as `name` and, where
// the config's LoRA targets the role, an adapter registered after it, as
// PEFT builds one: `name`_lora_drop (its dropout, if any), `name`_lora_a
// (in -> rank, no bias, torch.nn.Linear's initialisation, which is PEFT's
// kaiming_uniform(a=sqrt(5))), `name`_lora_b (rank -> out, zero: the network
// starts as its base), whose output, scaled by alpha / rank, is added.
// Under LoRA the base Linear stores its weight as the config's base_weights
// say (nf4: QLoRA), targeted or not.
class Projection {
 public:
  Projection() = default;
  Projection(torch::nn::Module& parent, const std::string& name, int64_t in, int64_t out, bool bias,
             const model::TransformerConfig& config, const std::string& role);
  torch::Tensor forward(const torch::Tensor& x) const;
  explicit operator bool() const { return base != nullptr; }

  std::shared_ptr<Linear> base;

 private:
  std::shared_ptr<Dropout> drop_;
  std::shared_ptr<Linear> a_, b_;  // b_ scales its output by alpha / rank
};

}  // namespace papaya::executor
