// HuggingFace config.json documents as papaya network configs: the shipped
// ones (configs/hf) count HuggingFace's parameters exactly, HuggingFace's
// defaults fill what a document leaves out, and what papaya cannot build
// is refused naming the field.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "model/catalog/hf_config.h"
#include "model/catalog/network_config.h"
#include "model/catalog/parameter_count.h"
#include "model/catalog/rotary_frequencies.h"
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
  EXPECT_NE(error_of({{"model_type", "bert"}, {"head_dim", 256}}).find("/head_dim: 256"), std::string::npos);
  EXPECT_EQ(error_of({{"model_type", "llama"}, {"rope_scaling", {{"rope_type", "mrope"}, {"factor", 8.0}}}}),
            "config.json: /rope_scaling: rope type 'mrope' is not built (default, linear, dynamic, llama3, yarn and longrope "
            "are)");
  EXPECT_NE(error_of({{"model_type", "qwen3"}, {"rope_parameters", {{"rope_type", "mrope"}}}})
                .find("/rope_parameters: rope type 'mrope'"),
            std::string::npos);
  EXPECT_NE(error_of({{"model_type", "phi3"}, {"rope_scaling", {{"type", "longrope"}, {"long_factor", {1.0}}}}})
                .find("/rope_scaling: /short_factor: longrope needs a factor for each rotated pair"),
            std::string::npos);
  EXPECT_NE(error_of({{"model_type", "llama"}, {"num_key_value_heads", 5}}).find("/num_key_value_heads: 5 does not divide 32"),
            std::string::npos);
  EXPECT_NE(error_of({{"model_type", "opt"}, {"do_layer_norm_before", false}}).find("/do_layer_norm_before"), std::string::npos);
  EXPECT_NE(error_of({{"model_type", "opt"}, {"word_embed_proj_dim", 512}}).find("/word_embed_proj_dim"), std::string::npos);
  EXPECT_NE(error_of({{"model_type", "t5"}})
                .find("config.json: /model_type: 't5' is not a supported model type (supported: gpt2, bert, roberta, vit, "
                      "llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, phi3, gemma2, gemma3, gemma3_text, gpt_oss, "
                      "deepseek_v3, "
                      "olmoe, gpt_neox, opt)"),
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

// Qwen3ForCausalLM ("Qwen/Qwen3-8B") and Qwen3MoeForCausalLM
// ("Qwen/Qwen3-30B-A3B"): their num_parameters(), as their cards say (8.2 B,
// 30.5 B): heads of 128 dimensions whatever the hidden size (4096 = 32 x
// 128, but 2048 < 32 x 128), q and k normalized per head with one weight of
// 128 each, 128 experts of 768 a layer, top-8 renormalized, no shared one.
TEST(HfConfig, Qwen3CountsHuggingFacesParameters) {
  const NetworkConfig dense = shipped("qwen3-8b");
  EXPECT_EQ(parameter_count(dense), 8190735360);
  EXPECT_EQ(dense.transformer().head_dim(), 128);
  EXPECT_EQ(dense.transformer().qk_norm, QkNorm::head);
  EXPECT_DOUBLE_EQ(dense.transformer().rotary_base, 1e6);
  const NetworkConfig moe = shipped("qwen3-30b-a3b");
  const int64_t layer = 2048 * 4096 + 2 * 2048 * 512 + 4096 * 2048 + 2 * 128 + 2 * 2048 + 2048 * 128 + 128 * 3 * 2048 * 768;
  EXPECT_EQ(parameter_count(moe), 48 * layer + 2 * 151936 * 2048 + 2048);
  EXPECT_EQ(parameter_count(moe), 30532122624);
  EXPECT_EQ(moe.transformer().attention_width(), 4096);
  EXPECT_TRUE(moe.transformer().moe->normalize_top_k);
  EXPECT_EQ(moe.transformer().moe->shared_hidden, 0);
  // Qwen3MoeConfig's head_dim, where not given, is hidden / heads.
  EXPECT_EQ(parse_network_config(json{{"model_type", "qwen3_moe"}}, "q.json").transformer().head_dim(), 64);
  // rope_parameters (newer configs) carries the base.
  const NetworkConfig newer = parse_network_config(
      json{{"model_type", "qwen3"}, {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 5e6}}}}, "q.json");
  EXPECT_DOUBLE_EQ(newer.transformer().rotary_base, 5e6);
}

// Phi3ForCausalLM ("microsoft/Phi-3-mini-4k-instruct"): num_parameters()
// 3,821,079,552 (3.8 B, as its card says): q, k and v one projection, the
// MLP's gate and up one, no biases; its window of 2047 tokens in every block.
TEST(HfConfig, Phi3CountsHuggingFacesParameters) {
  const NetworkConfig phi = shipped("phi-3-mini-4k");
  const int64_t layer = 3072 * 3 * 3072 + 3072 * 3072 + 3072 * 2 * 8192 + 8192 * 3072 + 2 * 3072;
  EXPECT_EQ(parameter_count(phi), 32 * layer + 2 * 32064 * 3072 + 3072);
  EXPECT_EQ(parameter_count(phi), 3821079552);
  EXPECT_TRUE(phi.transformer().fused_qkv);
  EXPECT_TRUE(phi.transformer().fused_gate_up);
  EXPECT_EQ(phi.transformer().seq_len, 2048);
  EXPECT_EQ(phi.transformer().window_of(0), 2047);
  EXPECT_EQ(phi.transformer().window_of(31), 2047);
  EXPECT_EQ(projection_roles(phi.transformer()), (std::vector<std::string>{"qkv", "o", "gate_up", "down"}));
  json dropped = json::parse(std::ifstream(config_dir() + "/hf/phi-3-mini-4k.json"));
  dropped["embd_pdrop"] = 0.1;
  EXPECT_NE(error_of(dropped).find("/embd_pdrop: 0.1"), std::string::npos);
}

// A window shorter than the sequence is honoured (fused attention masks
// what lies before it), in the blocks the config slides: Mistral's every
// block, Qwen2's from max_window_layers on (or as layer_types says) where
// use_sliding_window; one as long as the sequence is none. Eager attention
// has no window: refused.
TEST(HfConfig, SlidingWindowsShorterThanTheSequenceAreKept) {
  const auto window = [](const json& hf, std::optional<int> seq_len) {
    return parse_network_config(network_config_from_hf(hf, "n", "config.json", seq_len), "n").transformer();
  };
  const TransformerConfig mistral = window({{"model_type", "mistral"}}, 8192);
  EXPECT_EQ(mistral.window_of(0), 4096);
  EXPECT_EQ(mistral.window_of(31), 4096);
  EXPECT_EQ(window({{"model_type", "mistral"}}, 4096).sliding_window, 0);
  const json qwen = {{"model_type", "qwen2"}, {"use_sliding_window", true}, {"sliding_window", 1024}, {"max_window_layers", 30}};
  const TransformerConfig sliding = window(qwen, 2048);
  EXPECT_EQ(sliding.window_of(29), 0);
  EXPECT_EQ(sliding.window_of(30), 1024);
  EXPECT_EQ(sliding.window_blocks, (std::vector<int>{30, 31}));
  json typed = qwen;
  typed["num_hidden_layers"] = 3;
  typed["layer_types"] = {"sliding_attention", "full_attention", "sliding_attention"};
  EXPECT_EQ(window(typed, 2048).window_blocks, (std::vector<int>{0, 2}));
  EXPECT_EQ(window({{"model_type", "qwen2"}, {"sliding_window", 1024}}, 2048).sliding_window, 0);  // use_sliding_window false
  try {
    window({{"model_type", "mistral"}, {"attn_implementation", "eager"}}, 8192);
    ADD_FAILURE() << "an eager Mistral past its window was taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("n: /sliding_window: a window of causal attention: a gpt network's, with "
                                         "\"attention\": \"fused\""),
              std::string::npos)
        << e.what();
  }
}

// Gemma3ForCausalLM ("google/gemma-3-1b-it"): num_parameters() 999,885,952
// (1 B, as its card says): heads of 256 over a 1152-wide stream, q and k
// norms of 256, four norms a block (each branch's input and output), a
// tied head. Five blocks of six slide over 512 tokens at rotary base 10000,
// the sixth is global at 1e6; scores scaled by 256^-1/2. A gemma3 config is
// its text_config's language model; a soft cap it sets is honoured.
TEST(HfConfig, Gemma3CountsHuggingFacesParameters) {
  const NetworkConfig gemma = shipped("gemma-3-1b");
  const int64_t layer = 1152 * 1024 + 2 * 1152 * 256 + 1024 * 1152 + 2 * 256 + 3 * 1152 * 6912 + 4 * 1152;
  EXPECT_EQ(parameter_count(gemma), 26 * layer + 262144 * 1152 + 1152);
  EXPECT_EQ(parameter_count(gemma), 999885952);
  const TransformerConfig& t = gemma.transformer();
  EXPECT_EQ(t.activation, "geglu");
  EXPECT_TRUE(t.post_norms);
  EXPECT_TRUE(t.scaled_embedding);
  EXPECT_DOUBLE_EQ(t.attention_scale, 1.0 / 16);
  for (int i = 0; i < 26; ++i) {
    const bool global = (i + 1) % 6 == 0;
    EXPECT_EQ(t.window_of(i), global ? 0 : 512) << i;
    EXPECT_DOUBLE_EQ(t.rotary_base_of(i), global ? 1e6 : 1e4) << i;
  }
  json image_and_text = {{"model_type", "gemma3"},
                         {"text_config", json::parse(std::ifstream(config_dir() + "/hf/gemma-3-1b.json"))}};
  EXPECT_EQ(parameter_count(parse_network_config(image_and_text, "g.json")), 999885952);
  EXPECT_EQ(gemma.transformer().logit_softcap, 0);
  EXPECT_EQ(gemma.transformer().attention_softcap, 0);
  image_and_text["text_config"]["final_logit_softcapping"] = 30.0;
  EXPECT_EQ(parse_network_config(image_and_text, "g.json").transformer().logit_softcap, 30);
  EXPECT_NE(error_of({{"model_type", "gemma3_text"}, {"hidden_activation", "relu"}}).find("/hidden_activation: 'relu'"),
            std::string::npos);
}

// Gemma2ForCausalLM: num_parameters() of google/gemma-2-2b 2,614,341,888,
// gemma-2-9b 9,241,705,984 and gemma-2-27b 27,227,128,320 (heads of 128,
// scores scaled by 144^-1/2); no q and k norms, four norms a block, a tied
// head. Even blocks slide over 4096 tokens (none at the default 2048),
// odd ones are global, all at rotary base 1e4; scores soft-capped at 50,
// the final logits at 30 (null: not capped). The scores are capped inside
// fused attention: with them materialized (eager) the cap is refused,
// naming it.
TEST(HfConfig, Gemma2CountsHuggingFacesParametersAndCapsItsLogits) {
  const NetworkConfig gemma = shipped("gemma-2-2b");
  const int64_t layer = 2304 * 2048 + 2 * 2304 * 1024 + 2048 * 2304 + 3 * 2304 * 9216 + 4 * 2304;
  EXPECT_EQ(parameter_count(gemma), 26 * layer + 256000 * 2304 + 2304);
  EXPECT_EQ(parameter_count(gemma), 2614341888);
  const TransformerConfig& t = gemma.transformer();
  EXPECT_EQ(t.qk_norm, QkNorm::none);
  EXPECT_TRUE(t.post_norms);
  EXPECT_DOUBLE_EQ(t.attention_softcap, 50);
  EXPECT_DOUBLE_EQ(t.logit_softcap, 30);
  EXPECT_DOUBLE_EQ(t.attention_scale, 1.0 / 16);
  EXPECT_EQ(t.seq_len, 2048);
  for (int i = 0; i < 26; ++i) EXPECT_EQ(t.window_of(i), 0) << i;
  json hf = json::parse(std::ifstream(config_dir() + "/hf/gemma-2-2b.json"));
  const TransformerConfig long_context =
      parse_network_config(network_config_from_hf(hf, "g", "g.json", 8192), "g.json").transformer();
  for (int i = 0; i < 26; ++i) {
    EXPECT_EQ(long_context.window_of(i), i % 2 == 0 ? 4096 : 0) << i;
    EXPECT_DOUBLE_EQ(long_context.rotary_base_of(i), 1e4) << i;
  }
  const auto sized = [&](int hidden, int mlp, int layers, int heads, int head_dim, double scalar) {
    json h = hf;
    h["hidden_size"] = hidden;
    h["intermediate_size"] = mlp;
    h["num_hidden_layers"] = layers;
    h["num_attention_heads"] = heads;
    h["num_key_value_heads"] = heads / 2;
    h["head_dim"] = head_dim;
    h["query_pre_attn_scalar"] = scalar;
    return parse_network_config(h, "g.json");
  };
  EXPECT_EQ(parameter_count(sized(3584, 14336, 42, 16, 256, 256)), 9241705984);
  const NetworkConfig big = sized(4608, 36864, 46, 32, 128, 144);
  EXPECT_EQ(parameter_count(big), 27227128320);
  EXPECT_DOUBLE_EQ(big.transformer().attention_scale, 1.0 / 12);
  json uncapped = hf;
  uncapped["attn_logit_softcapping"] = nullptr;
  uncapped["final_logit_softcapping"] = nullptr;
  EXPECT_EQ(parse_network_config(uncapped, "g.json").transformer().attention_softcap, 0);
  EXPECT_EQ(parse_network_config(uncapped, "g.json").transformer().logit_softcap, 0);
  json eager = hf;
  eager["attn_implementation"] = "eager";
  EXPECT_NE(error_of(eager).find("config.json: /attn_logit_softcapping: papaya caps the scores inside fused attention only"),
            std::string::npos)
      << error_of(eager);
  uncapped["attn_implementation"] = "eager";  // its window spans the 2048 tokens: none to refuse either
  EXPECT_FALSE(parse_network_config(uncapped, "g.json").transformer().fused_attention());
}

// GptOssForCausalLM: num_parameters() of openai/gpt-oss-20b 20,914,757,184
// (the experts counted as parameters, not as the checkpoint's MXFP4 bytes;
// the shipped config is the published one without its quantization_config)
// and of gpt-oss-120b 116,829,156,672 (36 blocks, 128 experts): biases on
// q, k, v and o, a sink a head, router and experts with biases, an LM head
// of its own. Even blocks slide over 128 tokens, odd ones are global; yarn
// over 4,096 original positions; experts clamped at 7.
TEST(HfConfig, GptOssCountsHuggingFacesParameters) {
  const NetworkConfig oss = shipped("gpt-oss-20b");
  const int64_t attention = 2880 * 4096 + 4096 + 2 * (2880 * 512 + 512) + 4096 * 2880 + 2880 + 64;
  const int64_t experts = 32 * (2880 * 5760 + 5760 + 2880 * 2880 + 2880) + 2880 * 32 + 32;
  EXPECT_EQ(parameter_count(oss), 24 * (attention + experts + 2 * 2880) + 2 * 201088 * 2880 + 2880);
  EXPECT_EQ(parameter_count(oss), 20914757184);
  const TransformerConfig& t = oss.transformer();
  EXPECT_TRUE(t.attention_sinks);
  EXPECT_EQ(t.head_dim(), 64);
  EXPECT_FALSE(t.tied_head);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(t.window_of(i), i % 2 == 0 ? 128 : 0) << i;
  EXPECT_EQ(t.rope_scaling.type, "yarn");
  EXPECT_DOUBLE_EQ(t.rope_scaling.original_max_positions, 4096);
  EXPECT_FALSE(t.rope_scaling.truncate);
  EXPECT_DOUBLE_EQ(t.rotary_base, 150000);
  ASSERT_TRUE(t.moe);
  EXPECT_EQ(t.moe->experts_per_token, 4);
  EXPECT_TRUE(t.moe->normalize_top_k);
  EXPECT_TRUE(t.moe->router_bias && t.moe->expert_bias);
  EXPECT_DOUBLE_EQ(t.moe->swiglu_limit, 7);
  EXPECT_DOUBLE_EQ(t.moe->swiglu_alpha, 1.702);
  EXPECT_EQ(oss.precision, "amp-bf16");
  json big = json::parse(std::ifstream(config_dir() + "/hf/gpt-oss-20b.json"));
  big["num_hidden_layers"] = 36;
  big["num_local_experts"] = 128;
  big.erase("layer_types");  // as long as the blocks: HuggingFace's default alternation
  EXPECT_EQ(parameter_count(parse_network_config(big, "g.json")), 116829156672);
  EXPECT_EQ(parse_network_config(big, "g.json").transformer().window_of(34), 128);
}

// DeepseekV3ForCausalLM ("deepseek-ai/DeepSeek-V3", without the
// multi-token-prediction layer HuggingFace does not load): its checkpoint's
// 671,026,419,200 values, the 58 mixtures' 256 selection biases among them
// (HuggingFace keeps them as buffers: its num_parameters() is 14,848
// fewer; papaya as parameters it never trains). Latent
// attention: q through a latent of 1536, k and v through one of 512 beside a
// rotated key part of 64, heads of 128 + 64 q/k dimensions and 128 value
// ones, scores scaled by 192^-1/2 times yarn's mscale (0.1 ln 40 + 1)
// squared; three dense blocks, then 256 experts and a shared one.
TEST(HfConfig, DeepSeekV3CountsHuggingFacesParameters) {
  const NetworkConfig ds = shipped("deepseek-v3");
  const int64_t d = 7168;
  const int64_t attention = d * 1536 + 1536 + 1536 * 128 * 192 + d * 576 + 512 + 512 * 128 * 256 + 128 * 128 * d;
  const int64_t expert = 3 * d * 2048, mixture = 257 * expert + d * 256;
  const int64_t biases = 58 * 256;
  EXPECT_EQ(parameter_count(ds), 61 * (attention + 2 * d) + 3 * (3 * d * 18432) + 58 * mixture + 2 * 129280 * d + d + biases);
  EXPECT_EQ(parameter_count(ds), 671026419200);
  EXPECT_EQ(parameter_count(ds) - biases, 671026404352);
  EXPECT_EQ(trainable_parameter_count(ds), parameter_count(ds) - biases);
  const TransformerConfig& t = ds.transformer();
  ASSERT_TRUE(t.latent);
  EXPECT_EQ(t.latent->q_rank, 1536);
  EXPECT_EQ(t.latent->kv_rank, 512);
  EXPECT_EQ(t.head_dim(), 192);
  EXPECT_EQ(t.rotary_dims(), 64);
  EXPECT_EQ(t.attention_width(), 128 * 128);
  EXPECT_EQ(t.kv_heads, 128);
  EXPECT_NEAR(t.attention_scale, std::pow(0.1 * std::log(40.0) + 1, 2) / std::sqrt(192.0), 1e-15);
  EXPECT_DOUBLE_EQ(rotary_magnitude(t.rope_scaling), 1);  // mscale over mscale_all_dim
  ASSERT_TRUE(t.moe);
  for (int i = 0; i < 61; ++i) EXPECT_EQ(t.is_moe_block(i), i >= 3) << i;
  EXPECT_TRUE(t.moe->sigmoid_scores && t.moe->selection_bias && t.moe->normalize_top_k);
  EXPECT_EQ(t.moe->groups, 8);
  EXPECT_EQ(t.moe->groups_per_token, 4);
  EXPECT_DOUBLE_EQ(t.moe->routed_scale, 2.5);
  EXPECT_EQ(t.moe->shared_hidden, 2048);
  EXPECT_FALSE(t.moe->shared_gate);
  EXPECT_EQ(t.moe->aux_loss, 0);
  EXPECT_EQ(ds.precision, "amp-bf16");
  // Without a q latent (q_lora_rank null), q is one projection to every head.
  json whole_q = json::parse(std::ifstream(config_dir() + "/hf/deepseek-v3.json"));
  whole_q["q_lora_rank"] = nullptr;
  EXPECT_EQ(parameter_count(parse_network_config(whole_q, "d.json")),
            parameter_count(ds) - 61 * (d * 1536 + 1536 + 1536 * 128 * 192 - d * 128 * 192));
  for (const auto& [key, value] : {std::pair<const char*, json>{"scoring_func", "softmax"},
                                   {"topk_method", "greedy"},
                                   {"moe_layer_freq", 2},
                                   {"attention_bias", true},
                                   {"num_key_value_heads", 64}}) {
    json changed = json::parse(std::ifstream(config_dir() + "/hf/deepseek-v3.json"));
    changed[key] = value;
    EXPECT_NE(error_of(changed).find(std::string("config.json: /") + key), std::string::npos) << key << ": " << error_of(changed);
  }
  // An integer past an int is refused, not read wrapped (2^32 + 4 groups as 4).
  json wrapped = json::parse(std::ifstream(config_dir() + "/hf/deepseek-v3.json"));
  wrapped["n_group"] = (int64_t{1} << 32) + 4;
  EXPECT_EQ(error_of(wrapped), "config.json: /n_group: 4294967300 is out of range");
  // A count written as a number with a fraction is refused, not read cut
  // (2048.5 as 2048); written whole (7168.0) it is the count.
  json cut = json::parse(std::ifstream(config_dir() + "/hf/deepseek-v3.json"));
  cut["hidden_size"] = 7168.5;
  EXPECT_EQ(error_of(cut), "config.json: /hidden_size: 7168.5 is not a whole number");
  cut["hidden_size"] = 7168.0;
  EXPECT_EQ(parameter_count(parse_network_config(cut, "d.json")), parameter_count(ds));
  cut["hidden_size"] = 1e12;
  EXPECT_EQ(error_of(cut), "config.json: /hidden_size: 1000000000000.0 is out of range");
}

// DeepSeek-V3 with its multi-token prediction module (num_nextn_predict_layers
// 1, as DeepSeek pre-trained it; import-hf --mtp): its norms of the stream and
// of the embedding one token ahead, their projection (2 x 7168 -> 7168), one
// more block of the blocks' kind past the last (a mixture, its 256 selection
// biases among them) and a norm before the head; embedding and head are the
// main ones'. 11,610,068,224 more than without: the checkpoint's layer 61,
// less its copies of the embedding and head and the FP8 block scales.
TEST(HfConfig, DeepSeekV3WithItsMultiTokenPredictionModule) {
  const json hf = json::parse(std::ifstream(config_dir() + "/hf/deepseek-v3.json"));
  const NetworkConfig ds = shipped("deepseek-v3");
  const NetworkConfig mtp = parse_network_config(
      with_multi_token_prediction(hf, network_config_from_hf(hf, "ds", "config.json"), "config.json"), "d.json");
  const int64_t d = 7168;
  const int64_t attention = d * 1536 + 1536 + 1536 * 128 * 192 + d * 576 + 512 + 512 * 128 * 256 + 128 * 128 * d;
  const int64_t mixture = 257 * 3 * d * 2048 + d * 256;
  const int64_t module = 3 * d + 2 * d * d + attention + 2 * d + mixture;
  EXPECT_EQ(module, 11610067968);
  EXPECT_EQ(parameter_count(mtp), parameter_count(ds) + module + 256);
  EXPECT_EQ(trainable_parameter_count(mtp), trainable_parameter_count(ds) + module);
  ASSERT_TRUE(mtp.transformer().multi_token_prediction);
  EXPECT_EQ(mtp.transformer().multi_token_prediction->depth, 1);
  EXPECT_DOUBLE_EQ(mtp.transformer().multi_token_prediction->loss_scale, 0.1);
  EXPECT_FALSE(ds.transformer().multi_token_prediction);  // HuggingFace's Trainer leaves it out: papaya too by default
  // A config without modules is refused naming the field.
  json none = hf;
  none.erase("num_nextn_predict_layers");
  try {
    with_multi_token_prediction(none, network_config_from_hf(none, "ds", "config.json"), "config.json");
    ADD_FAILURE() << "no modules, not refused";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "config.json: /num_nextn_predict_layers: absent: the config has no multi-token prediction modules");
  }
}

// LlamaForCausalLM ("meta-llama/Llama-3.1-8B"): Llama 3's 8,030,261,248
// parameters, its rotation scaled as llama3 says (factor 8 over 8,192
// original positions); a gemma3 config's linear scaling is its global
// blocks' alone.
TEST(HfConfig, RopeScalingIsKept) {
  const NetworkConfig llama = shipped("llama-3.1-8b");
  EXPECT_EQ(parameter_count(llama), 8030261248);
  const RopeScaling& s = llama.transformer().rope_scaling;
  EXPECT_EQ(s.type, "llama3");
  EXPECT_DOUBLE_EQ(s.factor, 8);
  EXPECT_DOUBLE_EQ(s.high_freq_factor, 4);
  EXPECT_DOUBLE_EQ(s.original_max_positions, 8192);
  EXPECT_DOUBLE_EQ(llama.transformer().rotary_base, 500000);
  EXPECT_EQ(llama.transformer().rope_scaling_of(31).type, "llama3");
  json gemma = json::parse(std::ifstream(config_dir() + "/hf/gemma-3-1b.json"));
  gemma["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 8.0}};
  const TransformerConfig g = parse_network_config(gemma, "g.json").transformer();
  EXPECT_EQ(g.rope_scaling_of(5).type, "linear");  // global
  EXPECT_FALSE(g.rope_scaling_of(0).scales());     // local: its own base, unscaled
}

// longrope as Phi-3-mini-128k gives it (131,072 positions over 4,096
// original: factor 32, cos and sin times sqrt(1 + ln 32 / ln 4096)), each
// pair's frequency divided by its short factor within 4,096 tokens and by
// its long one past them; dynamic NTK scaling changes nothing within the
// positions, the only sequences papaya runs.
TEST(HfConfig, LongropeAndDynamicScalingAreKept) {
  std::vector<double> short_factors(48), long_factors(48);
  for (size_t i = 0; i < 48; ++i) {
    short_factors[i] = 1 + 0.01 * static_cast<double>(i);
    long_factors[i] = 1 + static_cast<double>(i);
  }
  const json phi = {{"model_type", "phi3"},
                    {"max_position_embeddings", 131072},
                    {"original_max_position_embeddings", 4096},
                    {"rope_scaling", {{"type", "longrope"}, {"short_factor", short_factors}, {"long_factor", long_factors}}}};
  const TransformerConfig t = parse_network_config(phi, "p.json").transformer();
  const RopeScaling& s = t.rope_scaling;
  EXPECT_EQ(s.type, "longrope");
  EXPECT_DOUBLE_EQ(s.factor, 32);
  EXPECT_NEAR(rotary_magnitude(s), std::sqrt(1 + std::log(32.0) / std::log(4096.0)), 1e-15);
  const std::vector<double> plain = rotary_frequencies(96, t.rotary_base, {});
  const std::vector<double> within = rotary_frequencies(96, t.rotary_base, s, 2048),
                            past = rotary_frequencies(96, t.rotary_base, s, 8192);
  for (size_t i = 0; i < 48; ++i) {
    EXPECT_DOUBLE_EQ(within[i], plain[i] / short_factors[i]) << i;
    EXPECT_DOUBLE_EQ(past[i], plain[i] / long_factors[i]) << i;
  }
  json shorter = phi;
  shorter["rope_scaling"]["long_factor"] = std::vector<double>(47, 1.0);
  try {
    parse_network_config(shorter, "p.json");
    ADD_FAILURE() << "47 long factors accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("p.json: /rope_scaling/long_factors: 47 factors for the 48 rotated pairs"),
              std::string::npos)
        << e.what();
  }
  const json dynamic = {{"model_type", "llama"}, {"rope_scaling", {{"rope_type", "dynamic"}, {"factor", 2.0}}}};
  EXPECT_FALSE(parse_network_config(dynamic, "d.json").transformer().rope_scaling.scales());
}

// yarn as GPT-OSS gives it (factor 32 over 4,096 original positions, betas
// 32 and 1, not truncated): its attention factor 0.1 ln 32 + 1; DeepSeek's
// mscale over mscale_all_dim (1 / 1: a factor of 1); the original positions
// the config's own where the scaling leaves them out; a given
// attention_factor kept.
TEST(HfConfig, YarnScalingIsKept) {
  json oss = {{"model_type", "qwen3"},
              {"max_position_embeddings", 131072},
              {"rope_scaling",
               {{"rope_type", "yarn"},
                {"factor", 32.0},
                {"original_max_position_embeddings", 4096},
                {"beta_fast", 32.0},
                {"beta_slow", 1.0},
                {"truncate", false}}}};
  const RopeScaling s = parse_network_config(oss, "o.json").transformer().rope_scaling;
  EXPECT_EQ(s.type, "yarn");
  EXPECT_DOUBLE_EQ(s.factor, 32);
  EXPECT_DOUBLE_EQ(s.original_max_positions, 4096);
  EXPECT_FALSE(s.truncate);
  EXPECT_NEAR(rotary_magnitude(s), 0.1 * std::log(32.0) + 1, 1e-12);
  json deepseek = oss;
  deepseek["rope_scaling"] = {{"type", "yarn"}, {"factor", 40.0}, {"mscale", 1.0}, {"mscale_all_dim", 1.0}};
  const RopeScaling d = parse_network_config(deepseek, "d.json").transformer().rope_scaling;
  EXPECT_DOUBLE_EQ(rotary_magnitude(d), 1);
  EXPECT_DOUBLE_EQ(d.original_max_positions, 131072);
  EXPECT_TRUE(d.truncate);
  deepseek["rope_scaling"]["attention_factor"] = 1.2;
  EXPECT_DOUBLE_EQ(rotary_magnitude(parse_network_config(deepseek, "d.json").transformer().rope_scaling), 1.2);
}

// Imported networks train in bf16 mixed precision unless their torch_dtype
// is float32.
TEST(HfConfig, ImportedNetworksTrainInBf16MixedPrecisionByDefault) {
  EXPECT_EQ(shipped("llama-2-7b").precision, "amp-bf16");  // torch_dtype float16
  EXPECT_EQ(shipped("qwen3-8b").precision, "amp-bf16");
  EXPECT_EQ(parse_network_config(json{{"model_type", "gpt2"}}, "g.json").precision, "amp-bf16");
  EXPECT_EQ(parse_network_config(json{{"model_type", "gpt2"}, {"torch_dtype", "float32"}}, "g.json").precision, "fp32");
  EXPECT_EQ(parse_network_config(json{{"model_type", "gpt2"}, {"dtype", "bfloat16"}}, "g.json").precision, "amp-bf16");
  EXPECT_EQ(error_of({{"model_type", "gpt2"}, {"torch_dtype", "int8"}}),
            "config.json: /torch_dtype: 'int8' is not a type papaya trains in (float32, bfloat16, float16)");
  EXPECT_EQ(load_network_config("llama-tiny").precision, "fp32");  // papaya's own
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
  EXPECT_EQ(olmoe.transformer().qk_norm, QkNorm::projection);
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
