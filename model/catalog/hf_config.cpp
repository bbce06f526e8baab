#include "model/catalog/hf_config.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <type_traits>
#include <utility>

#include "model/error.h"

namespace papaya::model {
namespace {

using nlohmann::json;

// Sequences longer than this are rarely trained at whole: a type's position
// count past it is not taken as the default length.
constexpr int default_seq_len_cap = 2048;

// A field, or HuggingFace's default where the document leaves it out. An
// integer past T's range is refused (read as T, 2^32 groups would be 0), and
// so is a fraction where a count belongs (read as T, 2048.5 would be 2048).
template <typename T>
T field(const json& hf, const char* key, T fallback, const std::string& label) {
  const auto it = hf.find(key);
  if (it == hf.end() || it->is_null()) return fallback;
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (it->is_number_float()) {
      const double value = it->get<double>();
      if (value != std::floor(value)) throw InputError(label + ": /" + key + ": " + it->dump() + " is not a whole number");
      if (value < static_cast<double>(std::numeric_limits<T>::min()) ||
          value >= static_cast<double>(std::numeric_limits<T>::max()) + 1.0) {
        throw InputError(label + ": /" + key + ": " + it->dump() + " is out of range");
      }
      return static_cast<T>(value);
    }
    const bool fits = it->is_number_unsigned()  ? it->get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max())
                      : it->is_number_integer() ? it->get<int64_t>() >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                                                      it->get<int64_t>() <= static_cast<int64_t>(std::numeric_limits<T>::max())
                                                : true;
    if (!fits) throw InputError(label + ": /" + key + ": " + it->dump() + " is out of range");
  }
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    throw InputError(label + ": /" + key + ": " + it->dump() + " is not of the expected type");
  }
}

std::string activation_of(const std::string& hf_activation, const char* key, const std::string& label) {
  if (hf_activation.rfind("gelu", 0) == 0) return "gelu";  // gelu, gelu_new, gelu_fast, gelu_pytorch_tanh
  if (hf_activation == "silu" || hf_activation == "swish") return "silu";
  if (hf_activation == "relu") return "relu";
  throw InputError(label + ": /" + key + ": '" + hf_activation +
                   "' is not an activation papaya's transformer MLP has (gelu, silu, relu)");
}

int seq_len_of(std::optional<int> seq_len, int positions, const std::string& label) {
  const int length = seq_len.value_or(std::min(positions, default_seq_len_cap));
  if (length < 1) throw InputError(label + ": sequence length " + std::to_string(length) + " is not a length");
  if (length > positions) {
    throw InputError(label + ": sequence length " + std::to_string(length) + " is past the " + std::to_string(positions) +
                     " positions the config has");
  }
  return length;
}

// GPT2Config: n_layer 12, n_embd 768, n_head 12, n_inner null (4x),
// n_positions 1024, vocab_size 50257, activation_function gelu_new,
// resid_pdrop 0.1, tie_word_embeddings true.
json gpt2(const json& hf, json out, const std::string& label, std::optional<int> seq_len) {
  if (!field(hf, "tie_word_embeddings", true, label)) {
    throw InputError(label + ": /tie_word_embeddings: false; papaya's GPT ties its LM head to the token embedding");
  }
  const int d = field(hf, "n_embd", 768, label);
  out["family"] = "gpt";
  out["layers"] = field(hf, "n_layer", 12, label);
  out["d_model"] = d;
  out["heads"] = field(hf, "n_head", 12, label);
  out["mlp_hidden"] = field(hf, "n_inner", 4 * d, label);
  out["activation"] =
      activation_of(field<std::string>(hf, "activation_function", "gelu_new", label), "activation_function", label);
  out["dropout"] = field(hf, "resid_pdrop", 0.1, label);
  out["attention_dropout"] = field(hf, "attn_pdrop", 0.1, label);
  const int positions = field(hf, "n_positions", 1024, label);
  out["seq_len"] = seq_len_of(seq_len, positions, label);
  out["max_positions"] = positions;
  out["vocab"] = field(hf, "vocab_size", 50257, label);
  return out;
}

// A dropout rate: set where positive (papaya's default is none).
void dropout_of(const json& hf, const char* key, double fallback, const char* papaya_key, json& out, const std::string& label) {
  const double p = field(hf, key, fallback, label);
  if (p > 0) out[papaya_key] = p;
}

// A head size other than hidden_size / heads (some configs give head_dim).
void require_head_dim(const json& hf, int hidden, int heads, const std::string& label) {
  const int head_dim = field(hf, "head_dim", hidden / heads, label);
  if (head_dim * heads != hidden) {
    throw InputError(label + ": /head_dim: " + std::to_string(head_dim) + " x " + std::to_string(heads) +
                     " heads is not hidden_size " + std::to_string(hidden) + "; papaya's heads split the hidden size");
  }
}

// yarn's magnitude in DeepSeek's terms, YaRN's 0.1·m·ln(factor) + 1.
double yarn_scale(double factor, double m) { return factor <= 1 ? 1 : 0.1 * m * std::log(factor) + 1; }

// Rotary positions' base (rope_theta; newer configs put it in
// rope_parameters) and the scaling of their frequencies (rope_scaling, or
// rope_parameters' rope_type): linear, llama3, yarn and longrope are built,
// written into `out`; dynamic changes nothing within max_position_embeddings,
// past which papaya refuses a sequence; another type is refused. yarn's
// original positions default to the config's max_position_embeddings, its
// attention factor to attention_factor, else mscale over mscale_all_dim
// where both are given (DeepSeek's), else 0.1 ln(factor) + 1. longrope's
// original positions are the config's original_max_position_embeddings
// (its factor then max_position_embeddings over them), else its
// max_position_embeddings with the scaling's factor.
void rope_of(const json& hf, double fallback, json& out, const std::string& label) {
  double base = field(hf, "rope_theta", fallback, label);
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    const auto it = hf.find(key);
    if (it == hf.end() || it->is_null()) continue;
    if (!it->is_object()) throw InputError(label + ": /" + key + ": " + it->dump() + " is not an object");
    const std::string where = label + ": /" + key;
    base = field(*it, "rope_theta", base, where);
    const std::string type = field<std::string>(*it, "rope_type", field<std::string>(*it, "type", "default", where), where);
    if (type == "default" || type == "dynamic") continue;
    if (type != "linear" && type != "llama3" && type != "yarn" && type != "longrope") {
      throw InputError(where + ": rope type '" + type +
                       "' is not built (default, linear, dynamic, llama3, yarn and longrope are)");
    }
    double factor = field(*it, "factor", 1.0, where);
    json scaling = {{"type", type}, {"factor", factor}};
    if (type == "llama3") {
      scaling["low_freq_factor"] = field(*it, "low_freq_factor", 1.0, where);
      scaling["high_freq_factor"] = field(*it, "high_freq_factor", 4.0, where);
      scaling["original_max_positions"] = field(*it, "original_max_position_embeddings", 8192.0, where);
    } else if (type == "yarn") {
      scaling["original_max_positions"] =
          field(*it, "original_max_position_embeddings", field(hf, "max_position_embeddings", 2048.0, label), where);
      scaling["beta_fast"] = field(*it, "beta_fast", 32.0, where);
      scaling["beta_slow"] = field(*it, "beta_slow", 1.0, where);
      scaling["truncate"] = field(*it, "truncate", true, where);
      const double mscale = field(*it, "mscale", 0.0, where), mscale_all_dim = field(*it, "mscale_all_dim", 0.0, where);
      const double derived = mscale > 0 && mscale_all_dim > 0 ? yarn_scale(factor, mscale) / yarn_scale(factor, mscale_all_dim)
                                                              : yarn_scale(factor, 1);
      scaling["attention_factor"] = field(*it, "attention_factor", derived, where);
    } else if (type == "longrope") {
      const double positions = field(hf, "max_position_embeddings", 2048.0, label);
      const double original = field(hf, "original_max_position_embeddings", 0.0, label);
      if (original > 0) factor = positions / original;
      scaling["factor"] = factor;
      scaling["original_max_positions"] = original > 0 ? original : positions;
      for (const auto& [key, papaya_key] :
           {std::pair{"short_factor", "short_factors"}, std::pair{"long_factor", "long_factors"}}) {
        if (!it->contains(key)) throw InputError(where + ": /" + key + ": longrope needs a factor for each rotated pair");
        scaling[papaya_key] = field(*it, key, std::vector<double>{}, where);
      }
      if (it->contains("attention_factor")) scaling["attention_factor"] = field(*it, "attention_factor", 1.0, where);
    }
    out["rope_scaling"] = scaling;
  }
  out["rotary_base"] = base;
}

// Per-type defaults of the Llama-like decoders (LlamaConfig, MistralConfig,
// Qwen2Config); kv_heads 0: as many as heads.
struct LlamaDefaults {
  int vocab, hidden, intermediate, layers, heads, kv_heads, positions;
  int head_dim = 0;  // 0: hidden / heads
};

// Llama, Mistral, Qwen2: RMSNorm, rotary positions, grouped-query attention,
// a gated SiLU MLP without biases, an LM head of its own unless tied.
json llama_like(const json& hf, json out, const std::string& label, std::optional<int> seq_len, const LlamaDefaults& d,
                bool qkv_bias) {
  const std::string act = field<std::string>(hf, "hidden_act", "silu", label);
  if (act != "silu" && act != "swish") {
    throw InputError(label + ": /hidden_act: '" + act + "': papaya's gated MLP is SwiGLU (silu)");
  }
  const int hidden = field(hf, "hidden_size", d.hidden, label), heads = field(hf, "num_attention_heads", d.heads, label);
  if (heads < 1) throw InputError(label + ": /num_attention_heads: " + std::to_string(heads) + " heads");
  const int head_dim = field(hf, "head_dim", d.head_dim > 0 ? d.head_dim : hidden / heads, label);
  const bool attention_bias = field(hf, "attention_bias", false, label);
  out["family"] = "gpt";
  out["fused_qkv"] = false;  // q, k and v projected apart
  out["layers"] = field(hf, "num_hidden_layers", d.layers, label);
  out["d_model"] = hidden;
  out["heads"] = heads;
  if (head_dim * heads != hidden) out["head_dim"] = head_dim;
  const int kv_heads = field(hf, "num_key_value_heads", d.kv_heads > 0 ? d.kv_heads : heads, label);
  if (kv_heads < 1 || heads % kv_heads != 0) {
    throw InputError(label + ": /num_key_value_heads: " + std::to_string(kv_heads) + " does not divide " + std::to_string(heads) +
                     " attention heads");
  }
  out["kv_heads"] = kv_heads;
  out["mlp_hidden"] = field(hf, "intermediate_size", d.intermediate, label);
  out["activation"] = "swiglu";
  out["norm"] = "rmsnorm";
  out["positions"] = "rotary";
  rope_of(hf, 10000.0, out, label);
  const double rotated = field(hf, "partial_rotary_factor", 1.0, label);
  if (rotated != 1.0) out["rotary_fraction"] = rotated;
  out["qkv_bias"] = qkv_bias || attention_bias;
  out["proj_bias"] = attention_bias;
  out["mlp_bias"] = field(hf, "mlp_bias", false, label);
  out["tied_head"] = field(hf, "tie_word_embeddings", false, label);
  dropout_of(hf, "attention_dropout", 0.0, "attention_dropout", out, label);
  out["seq_len"] = seq_len_of(seq_len, field(hf, "max_position_embeddings", d.positions, label), label);
  out["vocab"] = field(hf, "vocab_size", d.vocab, label);
  return out;
}

// Sliding-window attention: each token sees its last sliding_window tokens
// (`fallback` where the field is absent; null: no window), in `blocks`
// (empty: every block). A window as long as the sequence is none; a shorter
// one goes in the papaya document, which fused attention honours.
void add_window(const json& hf, json& net, std::optional<int> fallback, const std::vector<int>& blocks,
                const std::string& label) {
  const auto given = hf.find("sliding_window");
  if (given != hf.end() && given->is_null()) return;
  if (given == hf.end() && !fallback) return;
  const int window = field(hf, "sliding_window", fallback.value_or(0), label);
  if (window < 1) throw InputError(label + ": /sliding_window: " + std::to_string(window) + " tokens is no window");
  if (window >= net.at("seq_len").get<int>()) return;
  net["sliding_window"] = {{"tokens", window}};
  if (!blocks.empty()) net["sliding_window"]["blocks"] = blocks;
}

// The blocks of `layers` whose attention slides: those the config's
// layer_types names sliding_attention where it gives them, else those
// `by_default` picks.
std::vector<int> sliding_blocks(const json& hf, int layers, const std::function<bool(int)>& by_default) {
  std::vector<int> blocks;
  const auto types = hf.find("layer_types");
  const bool listed = types != hf.end() && types->is_array();
  for (int i = 0; i < layers; ++i) {
    const bool sliding = listed
                             ? static_cast<size_t>(i) < types->size() && (*types)[static_cast<size_t>(i)] == "sliding_attention"
                             : by_default(i);
    if (sliding) blocks.push_back(i);
  }
  return blocks;
}

// The blocks a Qwen2/Qwen3 config's window slides in where use_sliding_window:
// as layer_types says, else from max_window_layers (`fallback` where absent)
// on.
std::vector<int> qwen_window_blocks(const json& hf, const json& net, int fallback, const std::string& label) {
  const int first = field(hf, "max_window_layers", fallback, label);
  return sliding_blocks(hf, net.at("layers"), [first](int i) { return i >= first; });
}

// Qwen2's and Qwen3's window, where use_sliding_window and some block slides.
void add_qwen_window(const json& hf, json& net, int max_window_layers, const std::string& label) {
  if (!field(hf, "use_sliding_window", false, label)) return;
  const std::vector<int> blocks = qwen_window_blocks(hf, net, max_window_layers, label);
  if (!blocks.empty()) add_window(hf, net, 4096, blocks, label);
}

// LlamaConfig: vocab_size 32000, hidden_size 4096, intermediate_size 11008,
// 32 layers and heads, num_key_value_heads null (= heads),
// max_position_embeddings 2048, tie_word_embeddings false.
json llama(const json& hf, json out, const std::string& label, std::optional<int> seq_len) {
  return llama_like(hf, std::move(out), label, seq_len, {32000, 4096, 11008, 32, 32, 0, 2048}, false);
}

// MistralConfig: as Llama's but intermediate_size 14336, 8 k/v heads,
// max_position_embeddings 131072, sliding_window 4096.
json mistral(const json& hf, json out, const std::string& label, std::optional<int> seq_len) {
  json net = llama_like(hf, std::move(out), label, seq_len, {32000, 4096, 14336, 32, 32, 8, 131072}, false);
  add_window(hf, net, 4096, {}, label);
  return net;
}

// Qwen2Config: vocab_size 151936, intermediate_size 22016,
// max_position_embeddings 32768, q/k/v projections with biases,
// use_sliding_window false.
json qwen2(const json& hf, json out, const std::string& label, std::optional<int> seq_len) {
  json net = llama_like(hf, std::move(out), label, seq_len, {151936, 4096, 22016, 32, 32, 0, 32768}, true);
  add_qwen_window(hf, net, 28, label);
  return net;
}

// Qwen3Config: as Qwen2's but intermediate_size 22016, heads of head_dim
// 128 whatever the hidden size, q and k RMS-normalized over each head, no
// q/k/v biases (attention_bias false), max_window_layers 28 sliding where
// use_sliding_window.
json qwen3(const json& hf, json out, const std::string& label, std::optional<int> seq_len) {
  json net = llama_like(hf, std::move(out), label, seq_len, {151936, 4096, 22016, 32, 32, 32, 32768, 128}, false);
  add_qwen_window(hf, net, 28, label);
  net["qk_norm"] = "head";
  return net;
}

// Phi3Config: vocab_size 32064, hidden_size 3072, intermediate_size 8192,
// 32 layers and heads (k/v heads as many), max_position_embeddings 4096,
// no biases, q, k and v one projection (qkv_proj) and the MLP's gate and
// up one (gate_up_proj), resid_pdrop and embd_pdrop 0, an LM head of its
// own, sliding_window null (2047 in Phi-3-mini-4k).
json phi3(const json& hf, json out, const std::string& label, std::optional<int> seq_len) {
  json net = llama_like(hf, std::move(out), label, seq_len, {32064, 3072, 8192, 32, 32, 0, 4096}, false);
  add_window(hf, net, std::nullopt, {}, label);
  net["fused_qkv"] = true;
  net["fused_gate_up"] = true;
  const double residual = field(hf, "resid_pdrop", 0.0, label), embedding = field(hf, "embd_pdrop", 0.0, label);
  if (embedding != residual) {
    throw InputError(label + ": /embd_pdrop: " + std::to_string(embedding) + " apart from resid_pdrop " +
                     std::to_string(residual) + "; papaya's dropout after the embeddings is the residual branches' rate");
  }
  if (residual > 0) net["dropout"] = residual;
  return net;
}

// The first of `keys` (one field under its names old and new) the config
// gives, not null: its key and its value as text.
std::optional<std::pair<std::string, std::string>> first_given(const json& hf, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    const auto it = hf.find(key);
    if (it == hf.end() || it->is_null()) continue;
    return std::pair<std::string, std::string>{key, it->is_string() ? it->get<std::string>() : it->dump()};
  }
  return std::nullopt;
}

// The attention transformers runs the model with: its config's
// attn_implementation where it says (eager: the probabilities materialized),
// else SDPA, fused, as transformers runs Llama-like models by default.
std::string attention_of(const json& hf, const std::string& label) {
  const auto given = first_given(hf, {"attn_implementation", "_attn_implementation"});
  if (!given) return "fused";
  const auto& [key, value] = *given;
  if (value == "eager") return "materialized";
  if (value == "sdpa" || value == "flash_attention_2" || value == "flash_attention_3") return "fused";
  throw InputError(label + ": /" + key + ": '" + value +
                   "' is not an attention papaya runs (eager: materialized; sdpa, flash_attention_2, flash_attention_3: fused)");
}

// A soft cap on logits, c·tanh(x / c): the config's (null: none), else `fallback`.
double softcap_of(const json& hf, const char* key, double fallback, const std::string& label) {
  const auto it = hf.find(key);
  const double cap = it == hf.end() ? fallback : it->is_null() ? 0.0 : field(hf, key, 0.0, label);
  if (cap < 0) throw InputError(label + ": /" + key + ": " + std::to_string(cap) + " caps nothing (null: no cap)");
  return cap;
}

// What Gemma 2's and Gemma 3's text configs differ in where they leave a
// field out.
struct GemmaDefaults {
  int vocab, positions;
  double rope_theta, attention_softcap, logit_softcap;
  int window_pattern;  // every pattern-th block global, the others local
};

// Gemma 2 and 3 (text): vocab_size, hidden_size 2304, intermediate_size
// 9216, 26 layers, 8 heads of head_dim 256, 4 k/v heads, a GeGLU MLP
// (hidden_activation gelu_pytorch_tanh), RMSNorm before and after each
// branch (post_attention_layernorm, post_feedforward_layernorm), token
// embeddings times sqrt(hidden_size), scores scaled by
// query_pre_attn_scalar^-1/2 (256) and soft-capped where
// attn_logit_softcapping says, the LM head's logits where
// final_logit_softcapping says, a sliding window of 4096 in the local
// blocks (those layer_types names sliding_attention, else all but every
// window_pattern-th), a tied LM head. Gemma's RMSNorm weighs by 1 + w with
// w from 0: built as a weight w' = 1 + w from 1 (the same function and
// gradients).
json gemma_text(const json& hf, json out, const std::string& label, std::optional<int> seq_len, const GemmaDefaults& d) {
  const std::string act = field<std::string>(hf, "hidden_activation", "gelu_pytorch_tanh", label);
  if (act.rfind("gelu", 0) != 0) {
    throw InputError(label + ": /hidden_activation: '" + act + "': papaya's Gemma MLP is GeGLU (gelu)");
  }
  const int hidden = field(hf, "hidden_size", 2304, label), heads = field(hf, "num_attention_heads", 8, label);
  const int layers = field(hf, "num_hidden_layers", 26, label);
  const int kv_heads = field(hf, "num_key_value_heads", 4, label);
  if (heads < 1 || kv_heads < 1 || heads % kv_heads != 0) {
    throw InputError(label + ": /num_key_value_heads: " + std::to_string(kv_heads) + " does not divide " + std::to_string(heads) +
                     " attention heads");
  }
  const bool bias = field(hf, "attention_bias", false, label);
  out["family"] = "gpt";
  out["fused_qkv"] = false;
  out["layers"] = layers;
  out["d_model"] = hidden;
  out["heads"] = heads;
  out["kv_heads"] = kv_heads;
  out["head_dim"] = field(hf, "head_dim", 256, label);
  out["mlp_hidden"] = field(hf, "intermediate_size", 9216, label);
  out["activation"] = "geglu";
  out["norm"] = "rmsnorm";
  out["post_norms"] = true;
  out["scaled_embedding"] = true;
  out["attention_scale"] = 1 / std::sqrt(field(hf, "query_pre_attn_scalar", 256.0, label));
  const double attention_cap = softcap_of(hf, "attn_logit_softcapping", d.attention_softcap, label);
  if (attention_cap > 0) {
    if (attention_of(hf, label) != "fused") {
      throw InputError(label +
                       ": /attn_logit_softcapping: papaya caps the scores inside fused attention only "
                       "(attn_implementation flash_attention_2 or sdpa), not with them materialized (eager)");
    }
    out["attention_softcap"] = attention_cap;
  }
  const double logit_cap = softcap_of(hf, "final_logit_softcapping", d.logit_softcap, label);
  if (logit_cap > 0) out["logit_softcap"] = logit_cap;
  out["positions"] = "rotary";
  rope_of(hf, d.rope_theta, out, label);
  out["qkv_bias"] = bias;
  out["proj_bias"] = bias;
  out["mlp_bias"] = false;
  out["tied_head"] = field(hf, "tie_word_embeddings", true, label);
  dropout_of(hf, "attention_dropout", 0.0, "attention_dropout", out, label);
  out["seq_len"] = seq_len_of(seq_len, field(hf, "max_position_embeddings", d.positions, label), label);
  out["vocab"] = field(hf, "vocab_size", d.vocab, label);
  const int pattern = field(hf, "sliding_window_pattern", d.window_pattern, label);
  const std::vector<int> local = sliding_blocks(hf, layers, [pattern](int i) { return pattern < 1 || (i + 1) % pattern != 0; });
  if (!local.empty()) out["sliding_window"] = {{"tokens", field(hf, "sliding_window", 4096, label)}, {"blocks", local}};
  return out;
}

// Gemma2Config: Gemma's defaults with vocab_size 256000, 8192 positions,
// rope_theta 1e4, scores soft-capped at 50 and the final logits at 30, every
// second block global (layer_types, or the odd ones). A window as long as
// the sequence is none.
json gemma2(const json& hf, json out, const std::string& label, std::optional<int> seq_len) {
  json net = gemma_text(hf, std::move(out), label, seq_len, {256000, 8192, 1e4, 50.0, 30.0, 2});
  if (net.contains("sliding_window") && net["sliding_window"]["tokens"] >= net["seq_len"]) net.erase("sliding_window");
  return net;
}

// Gemma3TextConfig: Gemma's defaults with vocab_size 262208, 131072
// positions, q and k RMS-normalized per head, no soft caps (where the
// config gives one, it is honoured), every sixth block global
// (sliding_window_pattern, or as layer_types says), with rope_local_base_freq
// (10000) in the local blocks and rope_theta (1e6) in the global ones. The
// local blocks' window and rotary base go in the document even where the
// window spans the sequence: the base is theirs.
json gemma3_text(const json& hf, json out, const std::string& label, std::optional<int> seq_len) {
  json net = gemma_text(hf, std::move(out), label, seq_len, {262208, 131072, 1e6, 0.0, 0.0, 6});
  net["qk_norm"] = "head";
  if (net.contains("sliding_window")) net["sliding_window"]["rotary_base"] = field(hf, "rope_local_base_freq", 10000.0, label);
  return net;
}

// Gemma3Config (image and text): its text_config, Gemma3TextConfig's
// defaults where it leaves them out. The vision tower (SigLIP) and its
// projector are not built: the network is the language model.
json gemma3(const json& hf, json out, const std::string& label, std::optional<int> seq_len) {
  const auto text = hf.find("text_config");
  if (text == hf.end() || !text->is_object())
    throw InputError(label + ": /text_config: a gemma3 config's language model, expected an object");
  out["description"] = "the language model of a HuggingFace gemma3 config (its vision tower not built)";
  return gemma3_text(*text, std::move(out), label + ": /text_config", seq_len);
}

// The routed experts of a HuggingFace MoE config: `experts_key` of them,
// num_experts_per_tok a token, each of `hidden_key`'s width.
json moe_of(const json& hf, const char* experts_key, int experts, int per_token, const char* hidden_key, int hidden,
            bool normalize, double aux_loss, const std::string& label) {
  const int n = field(hf, experts_key, experts, label), k = field(hf, "num_experts_per_tok", per_token, label);
  if (k > n) {
    throw InputError(label + ": /num_experts_per_tok: " + std::to_string(k) + " experts a token, of the " + std::to_string(n) +
                     " there are (/" + experts_key + ")");
  }
  return {{"experts", n},
          {"experts_per_token", k},
          {"expert_hidden", field(hf, hidden_key, hidden, label)},
          {"normalize_top_k", field(hf, "norm_topk_prob", normalize, label)},
          {"aux_loss", field(hf, "router_aux_loss_coef", aux_loss, label)}};
}

// MixtralConfig: as Mistral's, 8 local experts of intermediate_size 14336,
// 2 a token (renormalized), router_aux_loss_coef 0.001, sliding_window null.
json mixtral(const json& hf, json out, const std::string& label, std::optional<int> seq_len) {
  json net = llama_like(hf, std::move(out), label, seq_len, {32000, 4096, 14336, 32, 32, 8, 131072}, false);
  add_window(hf, net, std::nullopt, {}, label);
  net["moe"] = moe_of(hf, "num_local_experts", 8, 2, "intermediate_size", 14336, true, 0.001, label);
  return net;
}

// Qwen2MoeConfig: as Qwen2's (2048 wide, 24 layers, 16 heads, 5632 dense
// MLP, 8192 positions), 60 experts of moe_intermediate_size 1408, 4 a token
// (not renormalized), a shared expert of 5632 with its sigmoid gate, every
// decoder_sparse_step-th layer sparse but mlp_only_layers,
// router_aux_loss_coef 0.001.
json qwen2_moe(const json& hf, json out, const std::string& label, std::optional<int> seq_len) {
  json net = llama_like(hf, std::move(out), label, seq_len, {151936, 2048, 5632, 24, 16, 16, 8192}, true);
  add_qwen_window(hf, net, 28, label);
  json moe = moe_of(hf, "num_experts", 60, 4, "moe_intermediate_size", 1408, false, 0.001, label);
  moe["shared_hidden"] = field(hf, "shared_expert_intermediate_size", 5632, label);
  moe["shared_gate"] = moe["shared_hidden"].get<int>() > 0;
  moe["sparse_step"] = field(hf, "decoder_sparse_step", 1, label);
  moe["dense_blocks"] = field(hf, "mlp_only_layers", std::vector<int>{}, label);
  net["moe"] = moe;
  return net;
}

// OlmoeConfig: 50304 tokens, 2048 wide, 16 layers and heads, 64 experts of
// intermediate_size 1024, 8 a token (not renormalized), q and k
// RMS-normalized, router_aux_loss_coef 0.01, 4096 positions.
json olmoe(const json& hf, json out, const std::string& label, std::optional<int> seq_len) {
  json net = llama_like(hf, std::move(out), label, seq_len, {50304, 2048, 1024, 16, 16, 0, 4096}, false);
  net["qk_norm"] = "projection";
  net["moe"] = moe_of(hf, "num_experts", 64, 8, "intermediate_size", 1024, false, 0.01, label);
  return net;
}

// Qwen3MoeConfig: as Qwen3's (2048 wide, 24 layers, 32 heads, 4 k/v
// heads, 6144 dense MLP; head_dim hidden / heads where not given), 128
// experts of moe_intermediate_size 768, 8 a token (not renormalized), no
// shared expert, every decoder_sparse_step-th layer sparse but
// mlp_only_layers, router_aux_loss_coef 0.001.
json qwen3_moe(const json& hf, json out, const std::string& label, std::optional<int> seq_len) {
  json net = llama_like(hf, std::move(out), label, seq_len, {151936, 2048, 6144, 24, 32, 4, 32768}, false);
  add_qwen_window(hf, net, 28, label);
  net["qk_norm"] = "head";
  json moe = moe_of(hf, "num_experts", 128, 8, "moe_intermediate_size", 768, false, 0.001, label);
  moe["sparse_step"] = field(hf, "decoder_sparse_step", 1, label);
  moe["dense_blocks"] = field(hf, "mlp_only_layers", std::vector<int>{}, label);
  net["moe"] = moe;
  return net;
}

// GptOssConfig: as Llama's with vocab_size 201088, hidden_size 2880, 36
// layers, 64 heads of head_dim 64, 8 k/v heads, biases on q, k, v and o
// (attention_bias), a learned sink a head, a sliding window of 128 in every
// other block (layer_types, or the even ones), rope_theta 150000 with yarn
// (factor 32 over 4,096 original positions, betas 32 and 1, not
// truncated), an LM head of its own, 131072 positions; every block a
// mixture of 128 local experts of intermediate_size 2880, 4 a token (the
// router's softmax over its top 4: renormalized), router and experts with
// biases, each expert's gate and up joined by a SwiGLU clamped at
// swiglu_limit (7) with a sigmoid of slope 1.702 (HuggingFace's constant),
// router_aux_loss_coef 0.9.
json gpt_oss(const json& hf, json out, const std::string& label, std::optional<int> seq_len) {
  json given = hf;
  if (!given.contains("rope_scaling")) {
    given["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 32.0},    {"beta_fast", 32.0},
                             {"beta_slow", 1.0},    {"truncate", false}, {"original_max_position_embeddings", 4096}};
  }
  if (!given.contains("rope_theta")) given["rope_theta"] = 150000.0;
  if (!given.contains("attention_bias")) given["attention_bias"] = true;
  json net = llama_like(given, std::move(out), label, seq_len, {201088, 2880, 2880, 36, 64, 8, 131072, 64}, false);
  net["attention_sinks"] = true;
  const std::vector<int> local = sliding_blocks(hf, net.at("layers"), [](int i) { return i % 2 == 0; });
  if (!local.empty()) add_window(hf, net, 128, local, label);
  json moe = moe_of(hf, "num_local_experts", 128, 4, "intermediate_size", 2880, true, 0.9, label);
  moe["router_bias"] = true;
  moe["expert_bias"] = true;
  moe["clamped_swiglu"] = {{"alpha", 1.702}, {"limit", field(hf, "swiglu_limit", 7.0, label)}};
  net["moe"] = moe;
  return net;
}

// The one value a DeepSeek field may take, papaya's and HuggingFace's;
// another is refused naming the field.
void require_deepseek_value(const json& hf, const char* key, const json& only, const std::string& why, const std::string& label) {
  const auto it = hf.find(key);
  if (it == hf.end() || it->is_null() || *it == only) return;
  throw InputError(label + ": /" + key + ": " + it->dump() + " is not built; " + why);
}

// DeepseekV3Config: vocab_size 129280, hidden_size 7168, 61 layers, 128
// heads (k/v as many), dense MLPs of intermediate_size 18432 in the first
// first_k_dense_replace (3) blocks, the others a mixture of 256 routed
// experts of moe_intermediate_size 2048 and n_shared_experts (1) of that
// width beside them, 8 a token within the best topk_group (4) of n_group
// (8) groups, sigmoid scores with a selection bias, renormalized
// (norm_topk_prob) and scaled by routed_scaling_factor (2.5); multi-head
// latent attention (q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim
// 128, qk_rope_head_dim 64, v_head_dim 128), scores scaled by
// qk_head_dim^-1/2 times yarn's mscale over mscale_all_dim squared, no
// attention bias, an LM head of its own, 4096 positions, rope_theta 10000.
// HuggingFace trains it without the multi-token-prediction layer
// (num_nextn_predict_layers; with_multi_token_prediction adds it) and
// without DeepSeek's sequence-wise balance loss; papaya too. rope_interleave lays the rotated pairs out otherwise in
// the weights, which changes neither the memory nor the work.
json deepseek_v3(const json& hf, json out, const std::string& label, std::optional<int> seq_len) {
  require_deepseek_value(hf, "scoring_func", "sigmoid", "DeepSeek-V3's experts are scored by a sigmoid", label);
  require_deepseek_value(hf, "topk_method", "noaux_tc", "DeepSeek-V3 chooses by group (noaux_tc)", label);
  require_deepseek_value(hf, "moe_layer_freq", 1, "every block past first_k_dense_replace is a mixture", label);
  require_deepseek_value(hf, "attention_bias", false, "papaya's latent attention projects without biases", label);
  json given = hf;
  given.erase("head_dim");  // HuggingFace's alias of qk_rope_head_dim, not a head's width
  json net = llama_like(given, std::move(out), label, seq_len, {129280, 7168, 18432, 61, 128, 128, 4096}, false);
  for (const char* key : {"head_dim", "qkv_bias", "fused_qkv"}) net.erase(key);
  if (net.at("kv_heads") != net.at("heads")) {
    throw InputError(label + ": /num_key_value_heads: latent attention makes k and v for every head (" + net.at("heads").dump() +
                     ")");
  }
  net.erase("kv_heads");
  const int nope = field(hf, "qk_nope_head_dim", 128, label), rope = field(hf, "qk_rope_head_dim", 64, label);
  json latent = {{"kv_rank", field(hf, "kv_lora_rank", 512, label)},
                 {"nope_dim", nope},
                 {"rope_dim", rope},
                 {"value_dim", field(hf, "v_head_dim", 128, label)}};
  const auto q_rank = hf.find("q_lora_rank");
  if (q_rank == hf.end() || !q_rank->is_null()) latent["q_rank"] = field(hf, "q_lora_rank", 1536, label);
  net["latent_attention"] = latent;
  double scale = 1 / std::sqrt(static_cast<double>(nope + rope));
  if (net.contains("rope_scaling")) {
    const json& scaling =
        hf.contains("rope_scaling") && hf.at("rope_scaling").is_object() ? hf.at("rope_scaling") : hf.at("rope_parameters");
    const double mscale_all_dim = field(scaling, "mscale_all_dim", 0.0, label + ": /rope_scaling");
    if (mscale_all_dim > 0) scale *= std::pow(yarn_scale(net.at("rope_scaling").at("factor"), mscale_all_dim), 2);
  }
  net["attention_scale"] = scale;
  const int experts_hidden = field(hf, "moe_intermediate_size", 2048, label);
  json moe = moe_of(hf, "n_routed_experts", 256, 8, "moe_intermediate_size", experts_hidden, true, 0.0, label);
  moe["aux_loss"] = 0.0;
  moe["shared_hidden"] = experts_hidden * field(hf, "n_shared_experts", 1, label);
  std::vector<int> dense(static_cast<size_t>(std::max(0, field(hf, "first_k_dense_replace", 3, label))));
  for (size_t i = 0; i < dense.size(); ++i) dense[i] = static_cast<int>(i);
  moe["dense_blocks"] = dense;
  moe["scoring"] = "sigmoid";
  moe["selection_bias"] = true;
  moe["groups"] = field(hf, "n_group", 8, label);
  moe["groups_per_token"] = field(hf, "topk_group", 4, label);
  moe["routed_scale"] = field(hf, "routed_scaling_factor", 2.5, label);
  net["moe"] = moe;
  return net;
}

// GPTNeoXConfig: vocab_size 50432, hidden_size 6144, 44 layers, 64 heads,
// intermediate_size 24576, hidden_act gelu, rotary_pct 0.25,
// rotary_emb_base 10000, max_position_embeddings 2048,
// use_parallel_residual true, tie_word_embeddings false, attention_bias true.
json gpt_neox(const json& hf, json out, const std::string& label, std::optional<int> seq_len) {
  const bool bias = field(hf, "attention_bias", true, label);
  out["family"] = "gpt";
  out["layers"] = field(hf, "num_hidden_layers", 44, label);
  out["d_model"] = field(hf, "hidden_size", 6144, label);
  out["heads"] = field(hf, "num_attention_heads", 64, label);
  out["mlp_hidden"] = field(hf, "intermediate_size", 24576, label);
  out["activation"] = activation_of(field<std::string>(hf, "hidden_act", "gelu", label), "hidden_act", label);
  out["positions"] = "rotary";
  // Newer configs name rotary_pct partial_rotary_factor, rotary_emb_base rope_theta.
  out["rotary_fraction"] = field(hf, "partial_rotary_factor", field(hf, "rotary_pct", 0.25, label), label);
  rope_of(hf, field(hf, "rotary_emb_base", 10000.0, label), out, label);
  out["qkv_bias"] = bias;
  out["proj_bias"] = bias;
  out["parallel_residual"] = field(hf, "use_parallel_residual", true, label);
  out["tied_head"] = field(hf, "tie_word_embeddings", false, label);
  dropout_of(hf, "hidden_dropout", 0.0, "dropout", out, label);
  out["attention_dropout"] = field(hf, "attention_dropout", 0.0, label);
  out["seq_len"] = seq_len_of(seq_len, field(hf, "max_position_embeddings", 2048, label), label);
  out["vocab"] = field(hf, "vocab_size", 50432, label);
  return out;
}

// OPTConfig: vocab_size 50272, hidden_size 768, 12 layers and heads,
// ffn_dim 3072, activation_function relu, max_position_embeddings 2048 (the
// table has 2 rows more: positions start at 2), do_layer_norm_before true,
// dropout 0.1, attention_dropout 0, enable_bias true, tied LM head.
json opt(const json& hf, json out, const std::string& label, std::optional<int> seq_len) {
  const int hidden = field(hf, "hidden_size", 768, label);
  if (!field(hf, "do_layer_norm_before", true, label)) {
    throw InputError(label + ": /do_layer_norm_before: false (post-norm OPT) is not built; papaya's OPT is pre-norm");
  }
  if (field(hf, "word_embed_proj_dim", hidden, label) != hidden) {
    throw InputError(label + ": /word_embed_proj_dim: embeddings projected to another width are not built");
  }
  if (field(hf, "_remove_final_layer_norm", false, label)) {
    throw InputError(label + ": /_remove_final_layer_norm: true is not built; papaya's OPT has a final norm");
  }
  if (!field(hf, "tie_word_embeddings", true, label)) {
    throw InputError(label + ": /tie_word_embeddings: false; papaya's OPT ties its LM head to the token embedding");
  }
  const std::string act = field<std::string>(hf, "activation_function", "relu", label);
  const bool bias = field(hf, "enable_bias", true, label);
  out["family"] = "gpt";
  out["fused_qkv"] = false;  // q, k and v projected apart
  out["layers"] = field(hf, "num_hidden_layers", 12, label);
  out["d_model"] = hidden;
  out["heads"] = field(hf, "num_attention_heads", 12, label);
  out["mlp_hidden"] = field(hf, "ffn_dim", 3072, label);
  out["activation"] = activation_of(act, "activation_function", label);
  out["qkv_bias"] = bias;
  out["proj_bias"] = bias;
  out["mlp_bias"] = bias;
  dropout_of(hf, "dropout", 0.1, "dropout", out, label);
  out["attention_dropout"] = field(hf, "attention_dropout", 0.0, label);
  const int positions = field(hf, "max_position_embeddings", 2048, label);
  out["seq_len"] = seq_len_of(seq_len, positions, label);
  out["max_positions"] = positions + 2;
  out["vocab"] = field(hf, "vocab_size", 50272, label);
  return out;
}

// The classes of a classification head: id2label's entries, else
// num_labels (PretrainedConfig's default: 2).
int classes_of(const json& hf, const std::string& label) {
  const auto labels = hf.find("id2label");
  if (labels != hf.end() && labels->is_object() && !labels->empty()) return static_cast<int>(labels->size());
  return field(hf, "num_labels", 2, label);
}

// BertConfig (RobertaConfig the same but vocab_size 50265): vocab_size 30522,
// hidden_size 768, 12 layers and heads, intermediate_size 3072, hidden_act
// gelu, hidden_dropout_prob 0.1, attention_probs_dropout_prob 0.1,
// max_position_embeddings 512, type_vocab_size 2; post-norm blocks, an
// embedding norm; for sequence classification the first token through the
// pooler (dense + tanh; RoBERTa's classification head is the same layers),
// dropout and the classifier. RoBERTa's positions start past the padding
// index (pad_token_id 1): its table has two rows the sequence cannot use.
json bert_like(const json& hf, json out, const std::string& label, std::optional<int> seq_len, int vocab, int unused_positions) {
  const std::string position_type = field<std::string>(hf, "position_embedding_type", "absolute", label);
  if (position_type != "absolute") {
    throw InputError(label + ": /position_embedding_type: '" + position_type +
                     "' is not built; papaya's BERT positions are absolute");
  }
  const int hidden = field(hf, "hidden_size", 768, label), heads = field(hf, "num_attention_heads", 12, label);
  require_head_dim(hf, hidden, heads, label);
  out["family"] = "bert";
  out["fused_qkv"] = false;  // q, k and v projected apart
  out["layers"] = field(hf, "num_hidden_layers", 12, label);
  out["d_model"] = hidden;
  out["heads"] = heads;
  out["mlp_hidden"] = field(hf, "intermediate_size", 3072, label);
  out["activation"] = activation_of(field<std::string>(hf, "hidden_act", "gelu", label), "hidden_act", label);
  dropout_of(hf, "hidden_dropout_prob", 0.1, "dropout", out, label);
  out["attention_dropout"] = field(hf, "attention_probs_dropout_prob", 0.1, label);
  const int positions = field(hf, "max_position_embeddings", 512, label);
  out["seq_len"] = seq_len_of(seq_len, positions - unused_positions, label);
  out["max_positions"] = positions;
  out["token_types"] = field(hf, "type_vocab_size", 2, label);
  out["pooler"] = true;
  out["vocab"] = field(hf, "vocab_size", vocab, label);
  out["classes"] = classes_of(hf, label);
  return out;
}

// ViTConfig: hidden_size 768, num_hidden_layers 12, num_attention_heads 12,
// intermediate_size 3072, hidden_act gelu, hidden_dropout_prob 0,
// attention_probs_dropout_prob 0, image_size 224, patch_size 16, num_channels 3.
json vit(const json& hf, json out, const std::string& label, std::optional<int> seq_len) {
  if (seq_len)
    throw InputError(label +
                     ": a ViT takes no sequence length: its sequence is its patches (image_size / patch_size, squared, + 1)");
  const int d = field(hf, "hidden_size", 768, label);
  out["family"] = "vit";
  out["fused_qkv"] = false;  // q, k and v projected apart
  out["layers"] = field(hf, "num_hidden_layers", 12, label);
  out["d_model"] = d;
  out["heads"] = field(hf, "num_attention_heads", 12, label);
  out["mlp_hidden"] = field(hf, "intermediate_size", 3072, label);
  out["activation"] = activation_of(field<std::string>(hf, "hidden_act", "gelu", label), "hidden_act", label);
  dropout_of(hf, "hidden_dropout_prob", 0.0, "dropout", out, label);
  out["attention_dropout"] = field(hf, "attention_probs_dropout_prob", 0.0, label);
  out["image_size"] = field(hf, "image_size", 224, label);
  out["patch"] = field(hf, "patch_size", 16, label);
  out["channels"] = field(hf, "num_channels", 3, label);
  out["classes"] = classes_of(hf, label);
  return out;
}

// The precision an imported network trains in: bf16 mixed precision, as
// torchtitan, Megatron-LM and the HF Trainer train (weights, gradients and
// AdamW state fp32; matmuls and the activations they make in bf16), unless
// its torch_dtype (newer configs: dtype) is float32. A float16 checkpoint
// trains in bf16 too: the type today's GPUs train in.
std::string precision_of(const json& hf, const std::string& label) {
  const auto given = first_given(hf, {"torch_dtype", "dtype"});
  if (!given) return "amp-bf16";
  const auto& [key, value] = *given;
  if (value == "float32") return "fp32";
  if (value == "bfloat16" || value == "float16" || value == "auto") return "amp-bf16";
  throw InputError(label + ": /" + key + ": '" + value + "' is not a type papaya trains in (float32, bfloat16, float16)");
}

json converted(const std::string& type, const json& hf, json out, const std::string& label, std::optional<int> seq_len) {
  if (type == "gpt2") return gpt2(hf, std::move(out), label, seq_len);
  if (type == "bert") return bert_like(hf, std::move(out), label, seq_len, 30522, 0);
  if (type == "roberta") return bert_like(hf, std::move(out), label, seq_len, 50265, 1 + field(hf, "pad_token_id", 1, label));
  if (type == "vit") return vit(hf, std::move(out), label, seq_len);
  if (type == "llama") return llama(hf, std::move(out), label, seq_len);
  if (type == "mistral") return mistral(hf, std::move(out), label, seq_len);
  if (type == "mixtral") return mixtral(hf, std::move(out), label, seq_len);
  if (type == "qwen2") return qwen2(hf, std::move(out), label, seq_len);
  if (type == "qwen2_moe") return qwen2_moe(hf, std::move(out), label, seq_len);
  if (type == "qwen3") return qwen3(hf, std::move(out), label, seq_len);
  if (type == "phi3") return phi3(hf, std::move(out), label, seq_len);
  if (type == "gemma2") return gemma2(hf, std::move(out), label, seq_len);
  if (type == "gemma3_text") return gemma3_text(hf, std::move(out), label, seq_len);
  if (type == "gemma3") return gemma3(hf, std::move(out), label, seq_len);
  if (type == "qwen3_moe") return qwen3_moe(hf, std::move(out), label, seq_len);
  if (type == "gpt_oss") return gpt_oss(hf, std::move(out), label, seq_len);
  if (type == "deepseek_v3") return deepseek_v3(hf, std::move(out), label, seq_len);
  if (type == "olmoe") return olmoe(hf, std::move(out), label, seq_len);
  if (type == "gpt_neox") return gpt_neox(hf, std::move(out), label, seq_len);
  if (type == "opt") return opt(hf, std::move(out), label, seq_len);
  throw InputError(label + ": /model_type: '" + type +
                   "' is not a supported model type (supported: " + supported_hf_model_types() + ")");
}

}  // namespace

bool is_hf_config(const json& doc) { return doc.is_object() && doc.contains("model_type") && !doc.contains("family"); }

const char* supported_hf_model_types() {
  return "gpt2, bert, roberta, vit, llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, phi3, gemma2, gemma3, "
         "gemma3_text, gpt_oss, deepseek_v3, olmoe, gpt_neox, opt";
}

json network_config_from_hf(const json& hf, const std::string& name, const std::string& label, std::optional<int> seq_len) {
  const auto type_field = hf.find("model_type");
  if (type_field == hf.end() || !type_field->is_string()) throw InputError(label + ": /model_type: expected a string");
  const std::string type = type_field->get<std::string>();
  json out = {{"name", name}, {"description", "imported from a HuggingFace " + type + " config"}};
  json net = converted(type, hf, std::move(out), label, seq_len);
  net["attention"] = attention_of(hf, label);
  net["precision"] = precision_of(hf, label);
  return net;
}

json with_multi_token_prediction(const json& hf, json net, const std::string& label) {
  const int depth = field(hf, "num_nextn_predict_layers", 0, label);
  if (depth < 1) {
    throw InputError(
        label + ": /num_nextn_predict_layers: " + (hf.contains("num_nextn_predict_layers") ? std::to_string(depth) : "absent") +
        ": the config has no multi-token prediction modules");
  }
  net["multi_token_prediction"] = {{"depth", depth}};
  net["description"] = net.value("description", std::string()) + ", with " + std::to_string(depth) +
                       (depth == 1 ? " multi-token prediction module" : " multi-token prediction modules");
  return net;
}

}  // namespace papaya::model
