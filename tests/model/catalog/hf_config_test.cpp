// HuggingFace config.json documents as papaya network configs: the shipped
// ones (configs/hf) count HuggingFace's parameters exactly, HuggingFace's
// defaults fill what a document leaves out, and what papaya cannot build
// is refused naming the field.
#include <gtest/gtest.h>

#include <fstream>

#include "model/catalog/hf_config.h"
#include "model/catalog/network_config.h"
#include "model/catalog/parameter_count.h"
#include "model/error.h"
#include "model/json_file.h"

namespace papaya::model {
namespace {

using nlohmann::json;

NetworkConfig shipped(const std::string& name) { return load_network_config(config_dir() + "/hf/" + name + ".json"); }

std::string error_of(const json& hf, std::optional<int> seq_len = std::nullopt) {
  try {
    network_config_from_hf(hf, "net", "config.json", seq_len);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// GPT2LMHeadModel.from_pretrained("gpt2" / "gpt2-medium") and
// ViTForImageClassification ("google/vit-base-patch16-224"): their
// num_parameters().
TEST(HfConfig, ShippedConfigsCountHuggingFacesParameters) {
  EXPECT_EQ(parameter_count(shipped("gpt2")), 124439808);
  EXPECT_EQ(parameter_count(shipped("gpt2-medium")), 354823168);
  EXPECT_EQ(parameter_count(shipped("vit-base-patch16-224")), 86567656);
  const NetworkConfig gpt2 = shipped("gpt2");
  EXPECT_EQ(gpt2.name, "gpt2");
  EXPECT_EQ(gpt2.family, Family::gpt);
  EXPECT_EQ(gpt2.transformer().seq_len, 1024);
  EXPECT_EQ(gpt2.transformer().mlp_hidden(), 3072);
  EXPECT_DOUBLE_EQ(gpt2.transformer().dropout, 0.1);
  EXPECT_EQ(gpt2.document.at("family"), "gpt");  // what profiles record: the papaya document
  EXPECT_EQ(shipped("vit-base-patch16-224").sequence_length(), 197);
}

// LlamaForCausalLM ("meta-llama/Llama-2-7b-hf"), MistralForCausalLM
// ("mistralai/Mistral-7B-v0.1"), Qwen2ForCausalLM ("Qwen/Qwen2-0.5B"),
// GPTNeoXForCausalLM ("EleutherAI/pythia-160m"), OPTForCausalLM
// ("facebook/opt-125m"): their num_parameters().
TEST(HfConfig, ShippedDecodersCountHuggingFacesParameters) {
  EXPECT_EQ(parameter_count(shipped("llama-2-7b")), 6738415616);
  EXPECT_EQ(parameter_count(shipped("llama-2-13b")), 13015864320);
  EXPECT_EQ(parameter_count(shipped("llama-3-8b")), 8030261248);
  EXPECT_EQ(parameter_count(shipped("mistral-7b")), 7241732096);
  EXPECT_EQ(parameter_count(shipped("qwen2-0.5b")), 494032768);
  EXPECT_EQ(parameter_count(shipped("pythia-160m")), 162322944);
  EXPECT_EQ(parameter_count(shipped("opt-125m")), 125239296);
  const TransformerConfig mistral = shipped("mistral-7b").transformer();
  EXPECT_EQ(mistral.kv_heads, 8);
  EXPECT_TRUE(mistral.rotary());
  EXPECT_FALSE(mistral.tied_head);
  EXPECT_EQ(mistral.mlp_hidden(), 14336);
  EXPECT_EQ(mistral.seq_len, 2048);  // 32768 positions, at most 2048
  const TransformerConfig qwen = shipped("qwen2-0.5b").transformer();
  EXPECT_TRUE(qwen.qkv_bias);
  EXPECT_FALSE(qwen.proj_bias);
  EXPECT_TRUE(qwen.tied_head);
  const TransformerConfig pythia = shipped("pythia-160m").transformer();
  EXPECT_EQ(pythia.rotary_dims(), 16);  // a quarter of 64
  EXPECT_TRUE(pythia.parallel_residual);
  const NetworkConfig opt = shipped("opt-125m");
  EXPECT_EQ(opt.transformer().activation, "relu");
  EXPECT_EQ(opt.position_rows(), 2050);  // positions start at 2
}

// For sequence classification with 2 labels, as HuggingFace's
// BertForSequenceClassification and RobertaForSequenceClassification count.
TEST(HfConfig, ShippedEncodersCountHuggingFacesParameters) {
  EXPECT_EQ(parameter_count(shipped("bert-base-uncased")), 109483778);
  EXPECT_EQ(parameter_count(shipped("bert-large-cased")), 333581314);
  EXPECT_EQ(parameter_count(shipped("roberta-base")), 124647170);
  const TransformerConfig bert = shipped("bert-large-cased").transformer();
  EXPECT_EQ(bert.token_types, 2);
  EXPECT_TRUE(bert.pooler);
  EXPECT_EQ(bert.seq_len, 512);
  EXPECT_EQ(bert.classes, 2);
  const NetworkConfig roberta = shipped("roberta-base");
  EXPECT_EQ(roberta.transformer().seq_len, 512);  // positions start past the padding index
  EXPECT_EQ(roberta.position_rows(), 514);
}

TEST(HfConfig, HuggingFacesDefaultsFillWhatTheDocumentLeavesOut) {
  const NetworkConfig gpt2 = parse_network_config(json{{"model_type", "gpt2"}}, "dir/small.json");
  EXPECT_EQ(gpt2.name, "small");
  EXPECT_EQ(parameter_count(gpt2), 124439808);
  const NetworkConfig wide = parse_network_config(json{{"model_type", "gpt2"},
                                                       {"n_embd", 64},
                                                       {"n_head", 4},
                                                       {"n_inner", 96},
                                                       {"n_layer", 2},
                                                       {"n_positions", 4096},
                                                       {"vocab_size", 100}},
                                                  "wide.json");
  EXPECT_EQ(wide.transformer().mlp_hidden(), 96);
  EXPECT_EQ(wide.transformer().seq_len, 2048);  // the position count, at most 2048
  EXPECT_EQ(network_config_from_hf(json{{"model_type", "gpt2"}}, "net", "config.json", 128).at("seq_len"), 128);
  // LlamaConfig's defaults are Llama-7B's (k/v heads as many as heads).
  EXPECT_EQ(parameter_count(parse_network_config(json{{"model_type", "llama"}}, "llama.json")), 6738415616);
  EXPECT_EQ(parse_network_config(json{{"model_type", "llama"}}, "llama.json").transformer().seq_len, 2048);
  // GPT-2 at a shorter sequence keeps its position table.
  EXPECT_EQ(parameter_count(parse_network_config(network_config_from_hf(json{{"model_type", "gpt2"}}, "g", "g.json", 128), "g")),
            124439808);
  const NetworkConfig vit =
      parse_network_config(json{{"model_type", "vit"}, {"id2label", {{"0", "cat"}, {"1", "dog"}, {"2", "emu"}}}}, "vit.json");
  EXPECT_EQ(vit.transformer().classes, 3);
  EXPECT_EQ(vit.transformer().image_size, 224);
}

TEST(HfConfig, WhatPapayaCannotBuildIsRefusedNamingTheField) {
  EXPECT_NE(error_of({{"model_type", "bert"}, {"position_embedding_type", "relative_key"}})
                .find("config.json: /position_embedding_type: 'relative_key' is not built"),
            std::string::npos);
  EXPECT_NE(error_of({{"model_type", "roberta"}}, 511).find("sequence length 511 is past the 510 positions"), std::string::npos);
  EXPECT_NE(error_of({{"model_type", "llama"}, {"hidden_act", "gelu"}}).find("/hidden_act: 'gelu'"), std::string::npos);
  EXPECT_NE(error_of({{"model_type", "llama"}, {"head_dim", 256}}).find("/head_dim: 256"), std::string::npos);
  EXPECT_NE(error_of({{"model_type", "llama"}, {"num_key_value_heads", 5}}).find("/num_key_value_heads: 5 does not divide 32"),
            std::string::npos);
  EXPECT_NE(error_of({{"model_type", "mistral"}}, 8192).find("/sliding_window: 4096 tokens"), std::string::npos);
  EXPECT_NE(error_of({{"model_type", "opt"}, {"do_layer_norm_before", false}}).find("/do_layer_norm_before"), std::string::npos);
  EXPECT_NE(error_of({{"model_type", "opt"}, {"word_embed_proj_dim", 512}}).find("/word_embed_proj_dim"), std::string::npos);
  EXPECT_NE(error_of({{"model_type", "t5"}})
                .find("config.json: /model_type: 't5' is not a supported model type (supported: gpt2, bert, roberta, vit, "
                      "llama, mistral, mixtral, qwen2, qwen2_moe, olmoe, gpt_neox, opt)"),
            std::string::npos);
  EXPECT_NE(error_of({{"model_type", "gpt2"}, {"activation_function", "tanh"}}).find("/activation_function: 'tanh'"),
            std::string::npos);
  EXPECT_NE(error_of({{"model_type", "gpt2"}, {"tie_word_embeddings", false}}).find("/tie_word_embeddings"), std::string::npos);
  EXPECT_NE(error_of({{"model_type", "gpt2"}, {"n_layer", "twelve"}}).find("/n_layer: \"twelve\""), std::string::npos);
  EXPECT_NE(error_of({{"model_type", "gpt2"}}, 4096).find("sequence length 4096 is past the 1024 positions"), std::string::npos);
  EXPECT_NE(error_of({{"model_type", 3}}).find("/model_type: expected a string"), std::string::npos);
  EXPECT_NE(error_of({{"model_type", "llama"}, {"attn_implementation", "flex_attention"}})
                .find("config.json: /attn_implementation: 'flex_attention' is not an attention papaya runs"),
            std::string::npos);
}

// Attention as transformers runs the model: fused (SDPA) unless the config
// says eager.
TEST(HfConfig, AttentionIsFusedUnlessTheConfigSaysEager) {
  EXPECT_TRUE(shipped("llama-2-7b").transformer().fused_attention());
  EXPECT_TRUE(shipped("gpt2").transformer().fused_attention());
  const auto attention = [](const json& hf) {
    return parse_network_config(network_config_from_hf(hf, "n", "config.json", std::nullopt), "n").transformer().attention;
  };
  EXPECT_EQ(attention({{"model_type", "llama"}, {"attn_implementation", "eager"}}), "materialized");
  EXPECT_EQ(attention({{"model_type", "llama"}, {"_attn_implementation", "flash_attention_2"}}), "fused");
  EXPECT_EQ(attention({{"model_type", "bert"}, {"attn_implementation", "sdpa"}}), "fused");
}

// MixtralForCausalLM ("mistralai/Mixtral-8x7B-v0.1"): num_parameters()
// 46,702,792,704. Qwen2MoeForCausalLM ("Qwen/Qwen1.5-MoE-A2.7B") and
// OlmoeForCausalLM ("allenai/OLMoE-1B-7B-0924"), counted module by module as
// HuggingFace builds them: 14.3 B and 6.9 B as their cards say (60 experts
// of 1,408 and a gated shared expert of 5,632 a layer, q/k/v biases; 64
// experts of 1,024 and q and k norms).
TEST(HfConfig, MixturesOfExpertsCountHuggingFacesParameters) {
  const NetworkConfig mixtral = shipped("mixtral-8x7b");
  EXPECT_EQ(parameter_count(mixtral), 46702792704);
  ASSERT_TRUE(mixtral.transformer().moe);
  EXPECT_EQ(mixtral.transformer().moe->experts, 8);
  EXPECT_EQ(mixtral.transformer().moe->experts_per_token, 2);
  EXPECT_TRUE(mixtral.transformer().moe->normalize_top_k);
  EXPECT_DOUBLE_EQ(mixtral.transformer().moe->aux_loss, 0.02);
  const NetworkConfig qwen = shipped("qwen1.5-moe-a2.7b");
  const int64_t qwen_layer =
      3 * (2048 * 2048 + 2048) + 2048 * 2048 + 2 * 2048 + 2048 * 60 + 60 * 3 * 2048 * 1408 + 3 * 2048 * 5632 + 2048;
  EXPECT_EQ(parameter_count(qwen), 24 * qwen_layer + 2 * 151936 * 2048 + 2048);
  EXPECT_EQ(parameter_count(qwen), 14315784192);
  EXPECT_FALSE(qwen.transformer().moe->normalize_top_k);
  const NetworkConfig olmoe = shipped("olmoe-1b-7b");
  EXPECT_EQ(parameter_count(olmoe), 6919161856);
  EXPECT_TRUE(olmoe.transformer().qk_norm);
  // Only every second block sparse, and block 0 dense by name.
  json sparse = json::parse(std::ifstream(config_dir() + "/hf/qwen1.5-moe-a2.7b.json"));
  sparse["decoder_sparse_step"] = 2;
  sparse["mlp_only_layers"] = {1};
  const TransformerConfig t = parse_network_config(sparse, "qwen.json").transformer();
  EXPECT_FALSE(t.is_moe_block(0));
  EXPECT_FALSE(t.is_moe_block(1));
  EXPECT_FALSE(t.is_moe_block(2));
  EXPECT_TRUE(t.is_moe_block(3));
  sparse["num_experts_per_tok"] = 61;
  EXPECT_EQ(error_of(sparse), "config.json: /num_experts_per_tok: 61 experts a token, of the 60 there are (/num_experts)");
}

}  // namespace
}  // namespace papaya::model
