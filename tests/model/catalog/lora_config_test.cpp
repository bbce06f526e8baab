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
  EXPECT_EQ(q_v.document.at("lora").at("rank"), 8);          // what profiles record
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
  EXPECT_NE(error_of(gpt2, lora(4, {"q"})).find("/lora/targets/0: 'q' names no projection of this network (its projections: qkv, o, fc1, fc2)"),
            std::string::npos)
      << error_of(gpt2, lora(4, {"q"}));
  EXPECT_NE(error_of(llama_2_7b(), lora(4, {"v", "fc1"})).find("/lora/targets/1: 'fc1'"), std::string::npos);
  EXPECT_NE(error_of(llama_2_7b(), lora(0)).find("/lora/rank"), std::string::npos) << error_of(llama_2_7b(), lora(0));
  LoraConfig dropout_one = lora(4);
  dropout_one.dropout = 1;
  EXPECT_NE(error_of(llama_2_7b(), dropout_one).find("/lora/dropout"), std::string::npos) << error_of(llama_2_7b(), dropout_one);
  EXPECT_NE(error_of(load_network_config("resnet-tiny"), lora(4)).find("a resnet network has none"), std::string::npos);
}

}  // namespace
}  // namespace papaya::model
