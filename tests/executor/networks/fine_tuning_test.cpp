// Fine-tuning (executor/networks/fine_tuning.h, model/catalog/layer_parameters.h):
// the model names and counts every layer's weights as the executor builds
// them, and the layers --freeze names train not, save nothing they need not,
// and leave the others' gradients as they were.
#include <gtest/gtest.h>

#include <map>

#include "executor/data.h"
#include "executor/networks/zoo.h"
#include "executor/optimizer.h"
#include "model/catalog/layer_parameters.h"
#include "model/catalog/parameter_count.h"
#include "model/error.h"
#include "model/json_file.h"
#include "tests/executor/moms_fixture.h"

namespace papaya::executor {
namespace {

class LayerParametersOf : public ::testing::TestWithParam<const char*> {};

model::NetworkConfig config_of(const std::string& text) {
  return text.front() == '{' ? model::parse_network_config(nlohmann::json::parse(text), "config")
                             : model::load_network_config(text);
}

TEST_P(LayerParametersOf, AreTheExecutorsLayerByLayer) {
  const model::NetworkConfig config = config_of(GetParam());
  const auto network = build_network(config);
  std::vector<model::LayerParameters> built;
  for (const Layer* layer : network->layers()) {
    int64_t count = layer->stored_weight() ? layer->stored_weight()->numel() : 0;
    bool trained = false;
    for (const auto& p : layer->parameters(/*recurse=*/false)) {
      count += p.numel();
      trained = trained || p.requires_grad();
    }
    if (count > 0) built.push_back({layer->path(), count, trained});
  }
  const std::vector<model::LayerParameters> priced = model::layer_parameters(config);
  ASSERT_EQ(priced.size(), built.size());
  for (size_t i = 0; i < built.size(); ++i) {
    EXPECT_EQ(priced[i].path, built[i].path);
    EXPECT_EQ(priced[i].count, built[i].count) << built[i].path;
    EXPECT_EQ(priced[i].trained, built[i].trained) << built[i].path;
  }
  EXPECT_EQ(model::parameter_count(config), network->parameter_count());
  EXPECT_EQ(model::trainable_parameter_count(config), network->trainable_parameter_count());
}

INSTANTIATE_TEST_SUITE_P(
    EveryFamily, LayerParametersOf,
    ::testing::Values(
        "gpt-tiny", "llama-tiny", "llama-tiny-lora", "mixtral-tiny", "qwen-moe-tiny", "olmoe-tiny", "deepseek-v3-tiny",
        "bert-tiny", "vit-tiny", "resnet-tiny", "mlp-tiny",
        R"({"name": "untied", "family": "gpt", "layers": 2, "d_model": 16, "heads": 4, "kv_heads": 2, "seq_len": 8, "vocab": 20,
            "activation": "swiglu", "norm": "rmsnorm", "positions": "rotary", "tied_head": false, "fused_qkv": false,
            "lora": {"rank": 2, "targets": ["k", "o", "up"], "base_weights": "nf4"}, "freeze": ["tok_emb"]})",
        R"({"name": "qlora-moe", "family": "gpt", "layers": 2, "d_model": 16, "heads": 4, "kv_heads": 2, "seq_len": 8,
            "vocab": 20, "activation": "swiglu", "norm": "rmsnorm", "positions": "rotary", "fused_qkv": false,
            "moe": {"experts": 3, "experts_per_token": 2, "expert_hidden": 24, "shared_hidden": 8, "shared_gate": true},
            "lora": {"rank": 2, "targets": ["q", "v", "gate", "down"], "base_weights": "nf4"}})",
        R"({"name": "qlora-latent", "family": "gpt", "layers": 2, "d_model": 16, "heads": 2, "seq_len": 8, "vocab": 20,
            "activation": "swiglu", "norm": "rmsnorm", "positions": "rotary", "tied_head": false,
            "latent_attention": {"kv_rank": 8, "nope_dim": 4, "rope_dim": 4, "value_dim": 6},
            "lora": {"rank": 2, "targets": ["q", "kv_b", "o"], "base_weights": "nf4"}})",
        R"({"name": "bert", "family": "bert", "layers": 2, "d_model": 16, "heads": 2, "seq_len": 8, "vocab": 20,
            "classes": 3, "token_types": 2, "pooler": true, "freeze": ["blocks.[0-0].*", "emb_norm"]})",
        R"({"name": "bottleneck", "family": "resnet", "block": "bottleneck", "stages": [1, 2], "width": 4, "image_size": 16,
            "channels": 3, "classes": 3, "freeze": ["conv1", "bn1", "layer1.*"]})",
        R"({"name": "mlp", "family": "mlp", "input": 6, "hidden": [8, 8], "classes": 3, "freeze": ["blocks.0.*"]})"));

model::NetworkConfig frozen_gpt() {
  return model::with_freeze(model::load_network_config("gpt-tiny"), {"tok_emb", "pos_emb", "blocks.[0-0].*"});
}

// The first block and the embeddings frozen: they run no backward and save
// nothing; the rest get the gradients the whole network gives them, bit for
// bit; the frozen weights do not move; the static bytes are the model's.
TEST(Freeze, TheFrozenLayersTrainNotAndTheOthersAsBefore) {
  const model::NetworkConfig config = frozen_gpt();
  const model::NetworkConfig whole = model::load_network_config("gpt-tiny");
  const Batch batch = make_synthetic_data(config, torch::kCPU, 1)->next(2);
  const auto frozen = testing::planned(config, "keep").network;
  const auto trained = testing::planned(whole, "keep").network;
  for (const char* path : {"tok_emb", "blocks.0.ln1", "blocks.0.attn.qkv", "blocks.0.mlp.fc1"}) {
    EXPECT_FALSE(frozen->find_layer(path)->differentiated()) << path;
    EXPECT_TRUE(frozen->find_layer(path)->slots().empty()) << path;
  }
  EXPECT_FALSE(frozen->find_layer("blocks.1.ln1")->slots().empty());
  const testing::Step a = testing::step(*frozen, batch), b = testing::step(*trained, batch);
  EXPECT_EQ(a.loss, b.loss);
  ASSERT_FALSE(a.grads.empty());
  for (const auto& [name, g] : a.grads) {
    EXPECT_EQ(name.rfind("blocks.1.", 0) == 0 || name.rfind("ln_f", 0) == 0, true) << name;
    EXPECT_TRUE(torch::equal(g, b.grads.at(name))) << name;
  }
  const auto optimizer = make_optimizer(*frozen, 1e-2, 0.01);
  EXPECT_DOUBLE_EQ(static_cast<double>(static_bytes(*frozen, *optimizer)), model::static_state_bytes(config));
  const torch::Tensor before = frozen->named_parameters()["blocks.0.attn.qkv.weight"].clone();
  frozen->loss(batch).backward();
  optimizer->step();
  EXPECT_TRUE(torch::equal(frozen->named_parameters()["blocks.0.attn.qkv.weight"], before));
}

// After a frozen embedding the first RMSNorm's input needs no gradient:
// autograd keeps only its normalized input, for its weight's gradient, and
// so does the layer's slot list (its input and rstd were listed, and priced
// by the model, though never held). Its weight's gradient is the whole
// network's, bit for bit, on the native path (keep) and on the MOM path
// (that input stored at 8 bits in both networks).
TEST(Freeze, AnRmsNormAfterAFrozenFrontSavesOnlyWhatItsWeightsGradientReads) {
  const model::NetworkConfig whole = model::load_network_config("llama-tiny");
  const model::NetworkConfig config = model::with_freeze(whole, {"tok_emb"});
  const Batch batch = make_synthetic_data(config, torch::kCPU, 1)->next(2);
  const auto frozen = testing::planned(config, "keep").network;
  const std::vector<Slot>& slots = frozen->find_layer("blocks.0.ln1")->slots();
  ASSERT_EQ(slots.size(), 1u);
  EXPECT_EQ(slots.front().name, "normalized");
  EXPECT_EQ(frozen->find_layer("blocks.0.ln2")->slots().size(), 3u);  // its input needs a gradient
  const std::string weight = "blocks.0.ln1.weight";
  EXPECT_TRUE(torch::equal(testing::step(*frozen, batch).grads.at(weight),
                           testing::step(*testing::planned(whole, "keep").network, batch).grads.at(weight)));
  const model::NetworkLayout layout = testing::planned(whole, "keep").layout;
  const auto stored_at_8_bits = [&](const model::NetworkConfig& c) {
    const nlohmann::json doc = {{"papaya_plan", 1}, {"name", "ln1-8"}, {"tensors", {{"blocks.0.ln1:normalized", "quantize-8"}}}};
    return testing::planned(c, model::parse_plan(doc, layout, c.name, "plan")).network;
  };
  const testing::Step moms = testing::step(*stored_at_8_bits(config), batch),
                      exact = testing::step(*stored_at_8_bits(whole), batch);
  EXPECT_TRUE(torch::equal(moms.grads.at(weight), exact.grads.at(weight)));
}

std::string check_error(const model::NetworkConfig& config) {
  try {
    model::check_frozen_layers(config, "--freeze");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Freeze, PatternsThatMatchNothingOrEverythingAreNamed) {
  const model::NetworkConfig gpt = model::load_network_config("gpt-tiny");
  EXPECT_EQ(check_error(frozen_gpt()), "");
  EXPECT_EQ(check_error(model::with_freeze(gpt, {"tok_emb", "embed*"})),
            "--freeze: 'embed*' matches no layer with weights of gpt-tiny (its layers: tok_emb, pos_emb, blocks.0.ln1, "
            "blocks.0.attn.qkv, blocks.0.attn.proj, blocks.0.ln2, ...)");
  EXPECT_EQ(check_error(model::with_freeze(gpt, {"*"})),
            "--freeze: freezes every layer with weights of gpt-tiny: nothing would train");
}

// A profile of a network's first blocks stands for the rest as copies of
// its last: blocks frozen otherwise than it are refused, naming the first.
TEST(Freeze, BlocksPastTheProfiledOnesMustBeFrozenAsTheLastOfThem) {
  const model::NetworkConfig llama = model::load_network_config(model::config_dir() + "/hf/llama-2-7b.json");
  const auto error_of = [](const model::NetworkConfig& config) -> std::string {
    try {
      model::check_blocks_frozen_alike(config, 2, "llama-2-7b: 2 blocks profiled");
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error_of(llama), "");
  EXPECT_EQ(error_of(model::with_freeze(llama, {"tok_emb", "blocks.*.attn.*"})), "");
  EXPECT_EQ(error_of(model::with_freeze(llama, {"blocks.[0-11].*"})),
            "llama-2-7b: 2 blocks profiled: blocks.12.ln1 is trained where blocks.1.ln1, the last of the 2 blocks profiled, is "
            "not: freeze the blocks past them alike, or profile them all");
  EXPECT_EQ(error_of(model::with_freeze(llama, {"blocks.[1-1].*"})).substr(0, 60),
            "llama-2-7b: 2 blocks profiled: blocks.2.ln1 is trained where");
}

}  // namespace
}  // namespace papaya::executor
