// Multi-token prediction (model::MultiTokenPredictionConfig) against a
// reference written here from the network's own weights: module k looks up
// the ids k places ahead, normalizes them and the stream it is given, runs
// the two joined through its projection and block, and scores its norm's
// output with the main head's weights against the targets k places ahead,
// the last k positions left out; the modules' mean loss is weighted beside
// the main one. The loss and every parameter's gradient are compared.
#include <gtest/gtest.h>

#include "executor/data.h"
#include "executor/layers/dense.h"
#include "executor/layers/loss.h"
#include "executor/networks/zoo.h"
#include "executor/segment.h"
#include "model/catalog/network_config.h"
#include "model/catalog/parameter_count.h"

namespace papaya::executor {
namespace {

model::NetworkConfig two_modules() {
  nlohmann::json doc = model::load_network_config("deepseek-v3-mtp-tiny").document;
  doc["multi_token_prediction"] = {{"depth", 2}, {"loss_scale", 0.5}};
  return model::parse_network_config(doc, "mtp.json");
}

Layer& layer(Network& network, const std::string& path) {
  Layer* found = network.find_layer(path);
  if (found == nullptr) throw std::logic_error("no layer " + path);
  return *found;
}

// The loss written out: the main head's, then each module from its parts.
torch::Tensor reference_loss(Network& network, const Batch& batch, const model::MultiTokenPredictionConfig& m) {
  torch::Tensor h = network.before_blocks(batch);
  for (int i = 0; i < network.block_count(); ++i) h = network.run_block(i, h);
  const torch::Tensor main = layer(network, "lm_head").run({layer(network, "ln_f").run({h}, batch)}, batch);
  const torch::Tensor table = dynamic_cast<Embedding&>(layer(network, "tok_emb")).weight;
  const torch::Tensor head = dynamic_cast<LMHead&>(layer(network, "lm_head")).weight;
  const int64_t s = batch.input.size(1);
  torch::Tensor predicted = torch::zeros({});
  for (int64_t k = 1; k <= m.depth; ++k) {
    const std::string module = "mtp." + std::to_string(k - 1) + ".";
    // Position i reads token i + k and predicts the target of position i + k.
    const torch::Tensor ids = torch::cat({batch.input.narrow(1, k, s - k), batch.input.narrow(1, 0, k)}, 1);
    const torch::Tensor ahead = layer(network, module + "enorm").run({torch::embedding(table, ids)}, batch);
    const torch::Tensor joined = torch::cat({layer(network, module + "hnorm").run({h}, batch), ahead}, -1);
    h = network.find_segment(module + "block")->run_layers(layer(network, module + "proj").run({joined}, batch));
    const torch::Tensor logits = torch::linear(layer(network, module + "norm").run({h}, batch), head);
    const torch::Tensor kept = logits.narrow(1, 0, s - k).reshape({-1, logits.size(-1)});
    predicted = predicted + torch::nll_loss(torch::log_softmax(kept, -1), batch.target.narrow(1, k, s - k).reshape({-1}));
  }
  return main + predicted * (m.loss_scale / m.depth);
}

std::vector<torch::Tensor> gradients(const torch::Tensor& loss, const std::vector<torch::Tensor>& of) {
  return torch::autograd::grad({loss}, of, {}, /*retain_graph=*/false, /*create_graph=*/false, /*allow_unused=*/true);
}

TEST(MultiTokenPrediction, IsTheReferenceWrittenFromItsParts) {
  torch::manual_seed(3);
  const model::NetworkConfig config = two_modules();
  const auto network = build_network(config);
  const Batch batch = make_synthetic_data(config, torch::kCPU, 1)->next(3);
  std::vector<torch::Tensor> trained;
  for (const auto& p : network->parameters()) {
    if (p.requires_grad()) trained.push_back(p);
  }
  const torch::Tensor got = network->loss(batch);
  const torch::Tensor want = reference_loss(*network, batch, *config.transformer().multi_token_prediction);
  EXPECT_NEAR(got.item<double>(), want.item<double>(), 1e-6 * want.item<double>());
  std::vector<torch::Tensor> got_grads = gradients(got, trained), want_grads = gradients(want, trained);
  for (size_t i = 0; i < trained.size(); ++i) {
    // An expert no token was routed to has none either way.
    for (auto* g : {&got_grads[i], &want_grads[i]}) *g = g->defined() ? *g : torch::zeros_like(trained[i]);
    EXPECT_TRUE(torch::allclose(got_grads[i], want_grads[i], 1e-4, 1e-6))
        << "parameter " << i << ": off by " << (got_grads[i] - want_grads[i]).abs().max().item<double>();
  }
  // The modules compute with the main embedding's and head's weights: no parameters of their own there.
  EXPECT_TRUE(layer(*network, "mtp.1.emb").parameters(false).empty());
  EXPECT_TRUE(layer(*network, "mtp.1.head").parameters(false).empty());
  EXPECT_EQ(network->parameter_count(), model::parameter_count(config));
}

}  // namespace
}  // namespace papaya::executor
