// A mixture of experts (executor/networks/moe.h) against a dense reference
// written here: every expert on every token, weighted by a routing matrix
// that is zero but for each token's chosen experts (DeepSeek-V3's chosen
// token by token within their groups), and the balancing loss as
// HuggingFace writes it added to the loss.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "executor/networks/moe.h"
#include "executor/networks/zoo.h"

namespace papaya::executor {
namespace {

MixtureOfExperts& mixture_of(Network& network, const std::string& block) {
  return *network.named_modules()[block + ".moe"]->as<MixtureOfExperts>();
}

torch::Tensor swiglu(const FeedForward& f, const torch::Tensor& t) {
  return torch::linear(torch::silu(torch::linear(t, f.fc1.base->weight)) * torch::linear(t, f.up.base->weight),
                       f.fc2.base->weight);
}

struct Dense {
  torch::Tensor out, balancing;
};

// DeepSeek-V3's choice, token by token: each group of experts ranked by
// the sum of its two best scores, the best groups_per_token kept, the
// experts_per_token best scores within them chosen.
torch::Tensor chosen_in_groups(const torch::Tensor& scores, const model::MoeConfig& moe) {
  const int64_t n = scores.size(0), size = moe.experts / moe.groups;
  const auto score = scores.accessor<float, 2>();
  std::vector<int64_t> chosen;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<std::pair<float, int64_t>> groups;
    for (int64_t g = 0; g < moe.groups; ++g) {
      std::vector<float> in_group;
      for (int64_t e = g * size; e < (g + 1) * size; ++e) in_group.push_back(score[i][e]);
      std::sort(in_group.rbegin(), in_group.rend());
      groups.push_back({in_group[0] + in_group[1], g});
    }
    std::sort(groups.rbegin(), groups.rend());
    std::vector<std::pair<float, int64_t>> candidates;
    for (int64_t kept = 0; kept < moe.groups_per_token; ++kept) {
      for (int64_t e = groups[kept].second * size; e < (groups[kept].second + 1) * size; ++e)
        candidates.push_back({score[i][e], e});
    }
    std::sort(candidates.rbegin(), candidates.rend());
    for (int k = 0; k < moe.experts_per_token; ++k) chosen.push_back(candidates[k].second);
  }
  return torch::tensor(chosen, torch::kLong).view({n, moe.experts_per_token});
}

Dense dense(const MixtureOfExperts& m, const model::MoeConfig& moe, const torch::Tensor& x) {
  const torch::Tensor t = x.reshape({-1, x.size(-1)});
  const int64_t n = t.size(0);
  const torch::Tensor logits = torch::linear(t, m.router->weight);
  const torch::Tensor p = moe.sigmoid_scores ? torch::sigmoid(logits) : torch::softmax(logits, -1);
  const torch::Tensor chosen =
      moe.groups > 1 || moe.selection_bias
          ? chosen_in_groups(m.selection_bias.defined() ? p.detach() + m.selection_bias : p.detach(), moe)
          : std::get<1>(p.topk(moe.experts_per_token, -1));
  torch::Tensor top = p.gather(1, chosen);
  if (moe.normalize_top_k) top = top / top.sum(-1, true);
  const torch::Tensor routing = torch::zeros_like(p).scatter(1, chosen, top * moe.routed_scale);
  torch::Tensor out = torch::zeros_like(t);
  for (int e = 0; e < moe.experts; ++e)
    out = out + swiglu(*m.experts->ptr(e)->as<FeedForward>(), t) * routing.select(1, e).unsqueeze(1);
  if (m.shared) {
    torch::Tensor s = swiglu(*m.shared, t);
    if (m.shared_gate) s = s * torch::sigmoid(torch::linear(t, m.shared_gate->weight));
    out = out + s;
  }
  const torch::Tensor routed = torch::one_hot(chosen, moe.experts).sum(std::vector<int64_t>{0, 1}).to(torch::kFloat);
  return {out.view_as(x), moe.experts * (p.mean(0) * routed / static_cast<double>(n)).sum()};
}

std::vector<torch::Tensor> gradients(const torch::Tensor& loss, const std::vector<torch::Tensor>& of) {
  std::vector<torch::Tensor> g = torch::autograd::grad({loss}, of, {}, /*retain_graph=*/false, /*create_graph=*/false,
                                                       /*allow_unused=*/true);
  for (size_t i = 0; i < g.size(); ++i) {
    if (!g[i].defined()) g[i] = torch::zeros_like(of[i]);
  }
  return g;
}

class Mixture : public ::testing::TestWithParam<const char*> {};

// Outputs equal; every gradient (input, router, each expert's and the
// shared expert's weights) that of the reference's loss plus the balancing
// loss at the config's weight over the mixture blocks.
TEST_P(Mixture, IsTheDenseReferenceWithItsBalancingLoss) {
  torch::manual_seed(1);
  const model::NetworkConfig config = model::load_network_config(GetParam());
  const model::MoeConfig& moe = *config.transformer().moe;
  int blocks = 0;
  for (int i = 0; i < config.transformer().layers; ++i) blocks += config.transformer().is_moe_block(i) ? 1 : 0;
  const auto network = build_network(config);
  MixtureOfExperts& m = mixture_of(*network, "blocks." + std::to_string(config.transformer().layers - 1));
  if (m.selection_bias.defined()) m.selection_bias.copy_(torch::randn_like(m.selection_bias) * 0.3);  // it sways the choice
  std::vector<torch::Tensor> of;
  const torch::Tensor x = torch::randn({3, 7, config.transformer().d_model}).requires_grad_();
  of.push_back(x);
  for (const auto& p : m.parameters()) {
    if (p.requires_grad()) of.push_back(p);  // not the selection bias
  }

  const torch::Tensor r = torch::randn({3, 7, config.transformer().d_model});
  const torch::Tensor out = m.forward(x);
  const std::vector<torch::Tensor> got = gradients((out * r).sum(), of);
  const Dense ref = dense(m, moe, x);
  EXPECT_TRUE(torch::allclose(out, ref.out, 1e-5, 1e-6));
  const std::vector<torch::Tensor> want = gradients((ref.out * r).sum() + moe.aux_loss / blocks * ref.balancing, of);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(torch::allclose(got[i], want[i], 1e-4, 1e-6))
        << "gradient " << i << ": off by " << (got[i] - want[i]).abs().max().item<double>();
  }
}

// With no gradient from the output, the router's is the balancing loss's
// alone, and the network's loss scale multiplies it as it does the loss.
TEST_P(Mixture, TheBalancingGradientIsScaledAsTheLoss) {
  torch::manual_seed(2);
  nlohmann::json doc = model::load_network_config(GetParam()).document;
  if (doc.at("moe").value("aux_loss", 0.01) == 0) doc["moe"]["aux_loss"] = 0.01;  // one to scale
  const model::NetworkConfig config = model::parse_network_config(doc, GetParam());
  const auto network = build_network(config);
  MixtureOfExperts& m = mixture_of(*network, "blocks." + std::to_string(config.transformer().layers - 1));
  const torch::Tensor x = torch::randn({2, 5, config.transformer().d_model});
  const auto router_gradient = [&](double scale) {
    network->set_loss_scale(scale);
    return gradients((m.forward(x) * 0).sum(), {m.router->weight})[0];
  };
  const torch::Tensor once = router_gradient(1);
  EXPECT_GT(once.abs().max().item<double>(), 0);
  EXPECT_TRUE(torch::allclose(router_gradient(8), 8 * once));
}

// Forced routing (MoeConfig::busiest_share) gives the last expert of each
// block its share of the n k routings and the others the rest alike (their
// rows add up to n k); the router's probabilities still weight them, so the
// router has a gradient.
TEST_P(Mixture, ForcedRoutingGivesEachExpertItsShare) {
  const model::NetworkConfig base = model::load_network_config(GetParam());
  const model::MoeConfig& moe = *base.transformer().moe;
  for (double share : {1.0 / moe.experts, 1.0 / moe.experts_per_token}) {
    const model::NetworkConfig config = model::with_expert_routing(base, share);
    torch::manual_seed(3);
    const auto network = build_network(config);
    const std::string block = "blocks." + std::to_string(config.transformer().layers - 1);
    MixtureOfExperts& m = mixture_of(*network, block);
    struct Rows : LayerObserver {
      void forward_begin(const Layer& layer, std::vector<torch::Tensor*>& inputs) override {
        if (layer.path().size() > 4 && layer.path().compare(layer.path().size() - 4, 4, ".fc1") == 0) {
          rows[layer.path()] = inputs.at(0)->size(0);
        }
      }
      void saved(const Layer&, const Slot&, const torch::Tensor&) override {}
      void forward_end(const Layer&, torch::Tensor&) override {}
      std::map<std::string, int64_t> rows;
    } seen;
    const int64_t n = 3 * 10, routings = n * moe.experts_per_token;
    const torch::Tensor x = torch::randn({3, 10, config.transformer().d_model});
    torch::Tensor out;
    {
      const ObserverGuard guard(&seen);
      out = m.forward(x);
    }
    const int64_t busiest = std::llround(share * static_cast<double>(routings));
    int64_t total = 0;
    for (int e = 0; e < moe.experts; ++e) {
      const int64_t rows = seen.rows.at(block + ".moe.experts." + std::to_string(e) + ".fc1");
      total += rows;
      if (e == moe.experts - 1) {
        EXPECT_EQ(rows, busiest) << "share " << share;
      } else {
        EXPECT_LE(std::abs(rows - (routings - busiest) / (moe.experts - 1)), 1) << "expert " << e << ", share " << share;
      }
    }
    EXPECT_EQ(total, routings);
    const torch::Tensor router_gradient = gradients(out.sum(), {m.router->weight})[0];
    EXPECT_GT(router_gradient.abs().max().item<double>(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Tiny, Mixture, ::testing::Values("mixtral-tiny", "qwen-moe-tiny", "olmoe-tiny", "deepseek-v3-tiny"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace papaya::executor
