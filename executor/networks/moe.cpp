#include "executor/networks/moe.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

namespace papaya::executor {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::Function;
using torch::autograd::variable_list;

// Passes `out` on; in backward, gives `loss` (fp32) the gradient `weight`
// x the network's loss scale, as if it had been added to the step's loss.
struct AddedLoss : Function<AddedLoss> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& out, const at::Tensor& /*loss*/, double weight,
                            const Network* network) {
    ctx->saved_data["weight"] = weight;
    ctx->saved_data["network"] = reinterpret_cast<int64_t>(network);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const double scale = reinterpret_cast<const Network*>(ctx->saved_data["network"].toInt())->loss_scale();
    const at::Tensor loss_grad = at::full({}, ctx->saved_data["weight"].toDouble() * scale, grad[0].options().dtype(at::kFloat));
    return {grad[0], loss_grad, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

MixtureOfExperts::MixtureOfExperts(const model::TransformerConfig& c, int mixture_blocks, const Network& network)
    : moe_(*c.moe),
      chosen_per_token_(c.moe->experts_per_token),
      normalize_(c.moe->normalize_top_k),
      groups_(c.moe->groups),
      groups_per_token_(c.moe->groups_per_token),
      routed_scale_(c.moe->routed_scale),
      balancing_weight_(c.moe->aux_loss / mixture_blocks),
      network_(network) {
  const model::MoeConfig& moe = *c.moe;
  router = register_module("router", std::make_shared<Linear>(c.d_model, moe.experts, moe.router_bias));
  router->fp32_under_autocast = moe.sigmoid_scores;  // DeepSeek-V3's logits in fp32, as HuggingFace takes them
  if (moe.sigmoid_scores) {
    scores = register_module("scores", std::make_shared<Activation>("sigmoid"));
  } else {
    probs = register_module("probs", std::make_shared<Softmax>());
  }
  // A parameter, never trained: counted and saved with the weights, as the checkpoint holds it.
  if (moe.selection_bias) selection_bias = register_parameter("selection_bias", torch::zeros({moe.experts}), false);
  experts = register_module("experts", torch::nn::ModuleList());
  const std::string activation = moe.swiglu_limit > 0 ? "clamped_swiglu" : "swiglu";
  for (int id : moe.built_expert_ids()) {
    expert_ids_.push_back(id);
    experts->push_back(std::make_shared<FeedForward>(c, moe.expert_hidden, moe.expert_bias, activation, 0.0, /*weighted=*/true));
  }
  if (moe.shared_hidden > 0) {
    if (moe.shared_gate) shared_gate = register_module("shared_gate", std::make_shared<Linear>(c.d_model, 1, false));
    shared =
        register_module("shared", std::make_shared<FeedForward>(c, moe.shared_hidden, false, "swiglu", 0.0, moe.shared_gate));
  }
}

torch::Tensor MixtureOfExperts::forced_choice(int64_t tokens, const torch::Device& device) const {
  // The n k routings as expert ids in runs, expert by expert (the last's run
  // its share of them, the others the rest alike), shared out per unit of
  // routings and repeated; routing r goes to token r mod n: a run no longer
  // than n (share x k <= 1) gives no token an expert twice.
  const model::ForcedRouting r = model::forced_routing(moe_, tokens * chosen_per_token_);
  std::vector<int64_t> ids;
  ids.reserve(static_cast<size_t>(r.unit * r.repeats));
  for (int64_t e = 0; e + 1 < moe_.experts; ++e) {
    ids.insert(ids.end(), static_cast<size_t>((r.each + (e < r.more ? 1 : 0)) * r.repeats), e);
  }
  ids.insert(ids.end(), static_cast<size_t>(r.busiest * r.repeats), moe_.experts - 1);
  return torch::tensor(ids, torch::kLong).view({chosen_per_token_, tokens}).t().contiguous().to(device);
}

torch::Tensor MixtureOfExperts::grouped_choice(const torch::Tensor& p) const {
  torch::Tensor choice = selection_bias.defined() ? p.detach() + selection_bias : p.detach();
  if (groups_ > 1) {
    const int64_t n = choice.size(0);
    const torch::Tensor by_group = choice.view({n, groups_, -1});
    const torch::Tensor group_score = std::get<0>(by_group.topk(2, -1)).sum(-1);  // (n, groups)
    const torch::Tensor best = std::get<1>(group_score.topk(groups_per_token_, -1));
    const torch::Tensor outside = torch::ones({n, groups_}, choice.options().dtype(torch::kBool)).scatter_(1, best, false);
    choice = by_group.masked_fill(outside.unsqueeze(-1), -std::numeric_limits<double>::infinity()).view({n, -1});
  }
  return std::get<1>(choice.topk(chosen_per_token_, -1));
}

torch::Tensor MixtureOfExperts::forward(const torch::Tensor& x) {
  const torch::Tensor tokens = x.reshape({-1, x.size(-1)});
  const int64_t n = tokens.size(0);
  const torch::Tensor logits = router->forward(tokens).to(torch::kFloat);
  const torch::Tensor p = scores ? scores->forward(logits) : probs->forward(logits);  // (n, experts)
  torch::Tensor weights, chosen;                                                      // (n, k)
  if (moe_.busiest_share || selection_bias.defined() || groups_ > 1) {
    chosen = moe_.busiest_share ? forced_choice(n, p.device()) : grouped_choice(p);
    weights = p.gather(1, chosen);
  } else {
    std::tie(weights, chosen) = p.topk(chosen_per_token_, -1);
  }
  if (normalize_) weights = weights / weights.sum(-1, /*keepdim=*/true);
  if (routed_scale_ != 1) weights = weights * routed_scale_;
  weights = weights.to(x.scalar_type());
  torch::Tensor out = torch::zeros_like(tokens);
  for (size_t e = 0; e < expert_ids_.size(); ++e) {
    const torch::Tensor hit = (chosen == expert_ids_[e]).nonzero();  // (tokens routed to it, [token, rank])
    const torch::Tensor routed = hit.select(1, 0);
    const torch::Tensor weight = weights.index({routed, hit.select(1, 1)}).unsqueeze(1);
    // Summed into place by index_put_, which keeps only the indices for
    // backward (index_add_ would keep the expert's whole output too).
    out.index_put_({routed}, experts[e]->as<FeedForward>()->forward(tokens.index_select(0, routed), weight), /*accumulate=*/true);
  }
  if (shared) out = out + shared->forward(tokens, shared_gate ? torch::sigmoid(shared_gate->forward(tokens)) : torch::Tensor());
  out = out.view(x.sizes());
  if (balancing_weight_ == 0 || !torch::GradMode::is_enabled() || !p.requires_grad()) return out;
  // The share of the n k routings each expert got (no gradient), and the
  // tokens' mean probability of it.
  const torch::Tensor share =
      torch::bincount(chosen.flatten(), {}, moe_.experts).to(torch::kFloat) / static_cast<double>(n * chosen_per_token_);
  const torch::Tensor balancing = static_cast<double>(moe_.experts) * chosen_per_token_ * (p.mean(0) * share).sum();
  return AddedLoss::apply(out, balancing, balancing_weight_, &network_);
}

}  // namespace papaya::executor
