// LoRA fine-tuning in a network config: PEFT's parameter counts on the
// shipped Llama-2-7B, its defaults, and targets a network lacks refused
// naming them.
#include <gtest/gtest.h>

#include "model/catalog/network_config.h"
#include "model/catalog/parameter_count.h"
#include "model/error.h"
#include "model/json_file.h"

namespace papaya::model {
namespace {

NetworkConfig llama_2_7b() { return load_network_config(config_dir() + "/hf/llama-2-7b.json"); }

LoraConfig lora(int rank, std::vector<std::string> targets = {}) {
  LoraConfig l;
  l.rank = rank;
  l.targets = std::move(targets);
  return l;
}

// peft.get_peft_model(LlamaForCausalLM("meta-llama/Llama-2-7b-hf"),
// LoraConfig(r=...)).print_trainable_parameters(): trainable params, and
// all params (the base's 6,738,415,616 and the adapters).
TEST(LoraConfig, CountsPeftsTrainableParametersOnLlama2_7B) {
  const NetworkConfig q_v = with_lora(llama_2_7b(), lora(8));
  EXPECT_EQ(q_v.transformer().lora->targets, (std::vector<std::string>{"q", "v"}));  // PEFT's default for Llama
  EXPECT_EQ(trainable_parameter_count(q_v), 4194304);
  EXPECT_EQ(parameter_count(q_v), 6738415616 + 4194304);
  const NetworkConfig all = with_lora(llama_2_7b(), lora(16, {"q", "k", "v", "o", "gate", "up", "down"}));
  EXPECT_EQ(trainable_parameter_count(all), 39976960);
  EXPECT_EQ(trainable_parameter_count(llama_2_7b()), parameter_count(llama_2_7b()));  // no adapters: all trained
  // fp32 AdamW: 16 bytes a trained parameter, 4 a frozen one.
  EXPECT_DOUBLE_EQ(static_state_bytes(llama_2_7b()), 16.0 * 6738415616);
  EXPECT_DOUBLE_EQ(static_state_bytes(q_v), 4.0 * 6738415616 + 16.0 * 4194304);
  EXPECT_DOUBLE_EQ(q_v.transformer().lora->scale(), 1.0);  // PEFT's default alpha 8 over rank 8
  EXPECT_EQ(q_v.document.at("lora").at("rank"), 8);        // what profiles record
}

// QLoRA on Llama-2-7B: every block's seven projections stored as
// bitsandbytes stores nf4 with its absmaxes quantized again (4.127 bits a
// weight), int8 at a byte a weight and an fp32 absmax a row; the embedding,
// head and norms stay fp32, the adapters train.
TEST(LoraConfig, PricesTheBaseWeightsAsStored) {
  const double projections = 32.0 * (4 * 4096.0 * 4096 + 3 * 4096.0 * 11008), adapters = 4194304;
  const auto stored_bits = [&](WeightFormat format) {
    LoraConfig l = lora(8);
    l.base_weights = format;
    const NetworkConfig config = with_lora(llama_2_7b(), l);
    EXPECT_EQ(config.document.at("lora").at("base_weights"), to_string(format));
    const double rest = 4 * (6738415616 + adapters - projections) + 12 * adapters;
    return (static_state_bytes(config) - rest) * 8 / projections;
  };
  EXPECT_NEAR(stored_bits(WeightFormat::nf4), 4.127, 5e-4);
  EXPECT_NEAR(stored_bits(WeightFormat::int8), 8 + 32.0 * 32 * (4 * 4096 + 2 * 11008 + 4096) / projections, 1e-9);
  EXPECT_DOUBLE_EQ(stored_bits(WeightFormat::bf16), 16);
  EXPECT_DOUBLE_EQ(stored_bits(WeightFormat::fp32), 32);
  EXPECT_EQ(stored_weight_bytes(4096, 4096, WeightFormat::nf4), 4096 * 4096 / 2 + 4096 * 64 + 4 * 1024 + 4);
}

// Mixtral-8x7B under QLoRA, r = 16 on attention and on every expert's three
// projections (PEFT's all-linear targets), the base in nf4: its 768 expert
// and 128 attention matrices at 4.127 bits a weight; the router, the norms
// and the embeddings in fp32 (bench/RESULTS.md sets it beside published
// figures).
TEST(LoraConfig, PricesAMixtureOfExpertsBaseAsStored) {
  LoraConfig l = lora(16, {"q", "k", "v", "o", "gate", "up", "down"});
  l.base_weights = WeightFormat::nf4;
  const NetworkConfig config = with_lora(load_network_config(config_dir() + "/hf/mixtral-8x7b.json"), l);
  const double attention = 32.0 * (2 * 4096.0 * 4096 + 2 * 4096.0 * 1024), experts = 32.0 * 8 * 3 * 4096 * 14336;
  const double adapters = 16.0 * 32 * (2 * (4096 + 4096) + 2 * (4096 + 1024) + 8 * 3 * (4096 + 14336));
  EXPECT_EQ(trainable_parameter_count(config), static_cast<int64_t>(adapters));
  EXPECT_EQ(parameter_count(config), 46702792704 + static_cast<int64_t>(adapters));
  const double rest = 4 * (46702792704 - attention - experts) + 16 * adapters;
  EXPECT_NEAR((static_state_bytes(config) - rest) * 8 / (attention + experts), 4.127, 5e-4);
}

std::string error_of(const NetworkConfig& config, const LoraConfig& l) {
  try {
    with_lora(config, l);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(LoraConfig, TargetsTheNetworkLacksAreNamed) {
  // GPT-2 makes q, k and v in one projection; Llama's MLP has no fc1.
  const NetworkConfig gpt2 = load_network_config(config_dir() + "/hf/gpt2.json");
  EXPECT_EQ(with_lora(gpt2, lora(4)).transformer().lora->targets, (std::vector<std::string>{"qkv"}));
  EXPECT_NE(error_of(gpt2, lora(4, {"q"}))
                .find("/lora/targets/0: 'q' names no projection of this network (its projections: qkv, o, fc1, fc2)"),
            std::string::npos)
      << error_of(gpt2, lora(4, {"q"}));
  EXPECT_NE(error_of(llama_2_7b(), lora(4, {"v", "fc1"})).find("/lora/targets/1: 'fc1'"), std::string::npos);
  EXPECT_NE(error_of(llama_2_7b(), lora(0)).find("/lora/rank"), std::string::npos) << error_of(llama_2_7b(), lora(0));
  LoraConfig dropout_one = lora(4);
  dropout_one.dropout = 1;
  EXPECT_NE(error_of(llama_2_7b(), dropout_one).find("/lora/dropout"), std::string::npos) << error_of(llama_2_7b(), dropout_one);
  EXPECT_NE(error_of(load_network_config("resnet-tiny"), lora(4)).find("a resnet network has none"), std::string::npos);
  nlohmann::json doc = with_lora(llama_2_7b(), lora(4)).document;
  doc["lora"]["base_weights"] = "nf5";
  try {
    parse_network_config(doc, "llama.json");
    ADD_FAILURE() << "nf5 accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/lora/base_weights"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace papaya::model
