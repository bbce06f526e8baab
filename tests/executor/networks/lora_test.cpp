// LoRA fine-tuning (executor/networks/lora.h): an adapter computes what the
// plain LibTorch formula computes, only adapters train, the network starts as
// its base, and what frozen layers save for backward is what autograd keeps.
#include <gtest/gtest.h>

#include "executor/data.h"
#include "executor/networks/lora.h"
#include "executor/networks/zoo.h"
#include "executor/optimizer.h"
#include "model/catalog/parameter_count.h"
#include "tests/executor/moms_fixture.h"

namespace papaya::executor {
namespace {

model::NetworkConfig lora_config(int rank, std::vector<std::string> targets, double dropout = 0) {
  model::LoraConfig lora;
  lora.rank = rank;
  lora.alpha = 3 * rank;  // scale 3
  lora.dropout = dropout;
  lora.targets = std::move(targets);
  model::NetworkConfig base = model::load_network_config("llama-tiny");
  nlohmann::json doc = base.document;
  doc["fused_qkv"] = false;
  return model::with_lora(model::parse_network_config(doc, "llama"), lora);
}

int64_t nbytes(const torch::Tensor& t) { return t.defined() ? static_cast<int64_t>(t.nbytes()) : 0; }

// y = x W^T + b + 3 (x A^T) B^T, as LibTorch computes it by hand: the same
// output and the same gradients, bit for bit.
TEST(Lora, AProjectionIsThePlainFormula) {
  const model::NetworkConfig config = lora_config(2, {"q"});
  torch::nn::Module parent;
  torch::manual_seed(1);
  const Projection q(parent, "q", 8, 6, true, config.transformer(), "q");
  const auto children = parent.named_children();
  Linear* a = children["q_lora_a"]->as<Linear>();
  Linear* b = children["q_lora_b"]->as<Linear>();
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(torch::equal(b->weight, torch::zeros({6, 2})));  // PEFT's start: the base alone
  {
    torch::NoGradGuard no_grad;
    b->weight.normal_();
  }
  q.base->freeze();
  const torch::Tensor x = torch::randn({3, 5, 8}).requires_grad_(), g = torch::randn({3, 5, 6});
  const torch::Tensor y = q.forward(x);
  (y * g).sum().backward();
  const torch::Tensor xr = x.detach().clone().requires_grad_(), ar = a->weight.detach().clone().requires_grad_(),
                      br = b->weight.detach().clone().requires_grad_();
  const torch::Tensor yr = torch::linear(xr, q.base->weight, q.base->bias) + torch::linear(torch::linear(xr, ar), br) * 3.0;
  (yr * g).sum().backward();
  EXPECT_TRUE(torch::equal(y, yr));
  EXPECT_TRUE(torch::equal(x.grad(), xr.grad()));
  EXPECT_TRUE(torch::equal(a->weight.grad(), ar.grad()));
  EXPECT_TRUE(torch::equal(b->weight.grad(), br.grad()));
  EXPECT_FALSE(q.base->weight.grad().defined());
}

// Only the adapters train: they are the model's count of trainable
// parameters, the only ones with gradients and AdamW state, and the network
// starts as its base (B is zero).
TEST(Lora, OnlyTheAdaptersTrainAndTheNetworkStartsAsItsBase) {
  const model::NetworkConfig config = lora_config(4, {"q", "v", "down"});
  torch::manual_seed(0);
  const auto network = build_network(config);
  EXPECT_EQ(network->trainable_parameter_count(), model::trainable_parameter_count(config));
  EXPECT_EQ(network->parameter_count(), model::parameter_count(config));
  const auto optimizer = make_optimizer(*network, 1e-3, 0.01);
  int64_t weights = 0, trained = 0;
  for (const auto& p : network->parameters()) weights += nbytes(p);
  for (const auto& p : network->trainable_parameters()) trained += nbytes(p);
  EXPECT_EQ(static_bytes(*network, *optimizer), weights + 3 * trained);  // gradients and two moments of the adapters

  // The base network with the same weights gives the same loss.
  nlohmann::json doc = config.document;
  doc.erase("lora");
  const auto base = build_network(model::parse_network_config(doc, "base"));
  const auto ours = network->named_parameters();
  {
    torch::NoGradGuard no_grad;
    for (auto& p : base->named_parameters()) p.value().copy_(ours[p.key()]);
  }
  const Batch batch = make_synthetic_data(config, torch::kCPU, 3)->next(2);
  const torch::Tensor loss = network->loss(batch);
  EXPECT_TRUE(torch::equal(loss, base->loss(batch)));
  loss.backward();
  for (const auto& p : network->named_parameters()) {
    const bool adapter = p.key().find("_lora_") != std::string::npos;
    EXPECT_EQ(p.value().grad().defined(), adapter) << p.key();
    if (p.key().find("_lora_b") != std::string::npos) {
      EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0) << p.key();
    }
  }
}

// The frozen front (embedding, the first norm) runs no backward and saves
// nothing; a frozen projection saves no input; the first block, whose first
// layer keeps no input, is not recomputed; the second is.
TEST(Lora, FrozenLayersSaveOnlyWhatTheirInputsGradientNeeds) {
  const model::NetworkConfig config = lora_config(2, {"v"});
  const auto network = build_network(config);
  for (const char* path : {"tok_emb", "blocks.0.ln1", "blocks.0.attn.q", "blocks.0.attn.k"}) {
    EXPECT_TRUE(network->find_layer(path)->slots().empty()) << path;
  }
  EXPECT_FALSE(network->find_layer("tok_emb")->differentiated());
  EXPECT_TRUE(network->find_layer("blocks.0.attn.v_lora_a")->differentiated());
  EXPECT_EQ(network->find_layer("blocks.1.ln1")->slots().size(), 2u);  // input and rstd: no normalized input for a frozen weight
  EXPECT_TRUE(network->find_layer("blocks.1.attn.proj")->slots().empty());
  ASSERT_EQ(network->segments().size(), 1u);
  EXPECT_EQ(network->segments()[0]->path(), "blocks.1");
  EXPECT_EQ(network->find_layer("blocks.0.ln2")->segment(), "");
}

// Autograd keeps an operand of a product for the other operand's gradient
// only: in the first block, where only q has an adapter, materialized
// attention's scores keep k (for q's gradient) and not q, the context
// neither probs nor v beyond what a gradient reads; the second block, whose
// every input needs a gradient, keeps both. Stored otherwise, the operands
// left give keep's gradients. Fused attention needs all it saves for q's
// gradient alone (its probabilities are made again from q and k).
TEST(Lora, AProductKeepsOnlyTheOperandsAGradientReads) {
  EXPECT_EQ(build_network(lora_config(2, {"q"}))->find_layer("blocks.0.attn.fused")->slots().size(), 5u);
  const model::NetworkConfig config = testing::materialized(lora_config(2, {"q"}));
  const auto network = build_network(config);
  const auto slot_names = [&](const std::string& path) {
    std::vector<std::string> names;
    for (const auto& slot : network->find_layer(path)->slots()) names.push_back(slot.name);
    return names;
  };
  EXPECT_EQ(slot_names("blocks.0.attn.scores"), (std::vector<std::string>{"k"}));
  EXPECT_EQ(slot_names("blocks.0.attn.context"), (std::vector<std::string>{"v"}));
  EXPECT_EQ(slot_names("blocks.1.attn.scores"), (std::vector<std::string>{"q", "k"}));
  EXPECT_EQ(slot_names("blocks.1.attn.context"), (std::vector<std::string>{"probs", "v"}));
  EXPECT_EQ(slot_names("blocks.0.mlp.gate"), (std::vector<std::string>{"a", "b"}));
  const Batch batch = make_synthetic_data(config, torch::kCPU, 1)->next(2);
  const auto keep = testing::step(*testing::planned(config, "keep").network, batch);
  const auto quantized = testing::step(*testing::planned(config, "quantize-8").network, batch);
  ASSERT_EQ(quantized.grads.size(), keep.grads.size());
  EXPECT_LT(testing::relative_error(quantized, keep), 0.05);
}

// Recomputing the block and quantizing the adapters' inputs work on the
// adapters as on any layer: recompute-all's gradients are keep's.
TEST(Lora, RecomputingGivesKeepsGradients) {
  const model::NetworkConfig config = lora_config(2, {"q", "v", "down"}, 0.1);
  const Batch batch = make_synthetic_data(config, torch::kCPU, 1)->next(2);
  const auto keep = testing::step(*testing::planned(config, "keep").network, batch);
  const auto recompute = testing::step(*testing::planned(config, "recompute-all").network, batch);
  EXPECT_TRUE(testing::identical(recompute, keep));
  EXPECT_FALSE(keep.grads.empty());
}

}  // namespace
}  // namespace papaya::executor
