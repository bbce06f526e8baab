#pragma once
// A mixture of experts in place of a block's MLP (Mixtral, Qwen-MoE, OLMoE):
// a router scores each token for every expert; the token goes to its
// experts_per_token best, each a SwiGLU MLP of papaya layers that runs on the
// tokens routed to it and no others (dropless); their outputs, weighted by
// the routing probabilities (renormalized over the chosen where the config
// says), are summed back per token, with a shared expert's beside them
// (sigmoid-gated where the config says).
//
// DeepSeek-V3 scores each expert by a sigmoid of its logit instead, chooses
// by score plus a selection bias (a buffer DeepSeek adjusts by a rule
// outside the gradient, zero here) within each token's best groups of
// experts (a group ranked by its two best), and scales the chosen's weights.
//
// The load-balancing loss, Switch Transformer's as HuggingFace writes it
// (experts x the sum over experts of the tokens' mean probability times the
// share of routings it got), is taken per block and averaged over the
// mixture blocks, its weight the config's aux_loss, as Megatron-LM does: its
// gradient joins the block's backward (recomputed blocks too), its value is
// not in the reported loss. HuggingFace pools the blocks' tokens first.
//
// With the config's busiest_share, the experts are not the router's choice
// but forced: the last gets that share of the routings, the others the rest
// alike, each token distinct experts (shared out in repeats of the config's
// routing_unit); the router's probabilities of them weight their outputs as
// the chosen's would (so the router still trains). Where only a few experts
// are built (profiled_experts), the routings of the others are dropped.
#include <memory>
#include <vector>

#include "executor/layers/attention.h"
#include "executor/networks/feed_forward.h"
#include "executor/networks/network.h"

namespace papaya::executor {

class MixtureOfExperts : public torch::nn::Module {
 public:
  // `mixture_blocks`: how many blocks hold one (the balancing loss's mean);
  // `network`: its loss scale is read in backward (Network::loss_scale).
  MixtureOfExperts(const model::TransformerConfig& c, int mixture_blocks, const Network& network);
  torch::Tensor forward(const torch::Tensor& x);

  std::shared_ptr<Linear> router;      // d -> experts, a bias where the config says (GPT-OSS)
  std::shared_ptr<Softmax> probs;      // over the experts, in fp32, or
  std::shared_ptr<Activation> scores;  // each expert's sigmoid, in fp32 (DeepSeek-V3)
  torch::Tensor selection_bias;        // (experts) added to the scores for the choice, never trained; or undefined
  torch::nn::ModuleList experts{nullptr};
  std::shared_ptr<Linear> shared_gate;  // d -> 1, or none (it runs before the shared expert, which it weights)
  std::shared_ptr<FeedForward> shared;  // or none

 private:
  // Each token's experts, forced by busiest_share: (tokens, k).
  torch::Tensor forced_choice(int64_t tokens, const torch::Device& device) const;
  // Each token's k experts by score `p` (tokens, experts), plus the
  // selection bias, within its best groups: (tokens, k).
  torch::Tensor grouped_choice(const torch::Tensor& p) const;

  model::MoeConfig moe_;
  // Each built expert's id among the mixture's (MoeConfig::built_expert_ids).
  std::vector<int64_t> expert_ids_;
  int64_t chosen_per_token_;
  bool normalize_;
  int64_t groups_, groups_per_token_;
  double routed_scale_;
  double balancing_weight_;  // aux_loss / mixture blocks
  const Network& network_;
};

}  // namespace papaya::executor
