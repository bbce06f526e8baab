#include "model/hf_config.h"

#include <algorithm>
#include <map>

#include "model/error.h"

namespace papaya::model {
namespace {

using nlohmann::json;

// Sequences longer than this are rarely trained at whole: a type's position
// count past it is not taken as the default length.
constexpr int default_seq_len_cap = 2048;

// The types papaya cannot build yet, and what they need.
const std::map<std::string, std::string>& unbuilt() {
  static const std::map<std::string, std::string> needs = {
      {"bert", "a token-type embedding and a pooler"},
      {"roberta", "a token-type embedding, a pooler and positions offset past the padding index"},
      {"llama", "rotary position embeddings and grouped-query attention"},
      {"mistral", "rotary position embeddings and grouped-query attention"},
      {"qwen2", "rotary position embeddings, grouped-query attention and q/k/v biases"},
      {"gpt_neox", "rotary position embeddings and a parallel residual"},
      {"opt", "ReLU MLPs and positions offset by 2"},
  };
  return needs;
}

// A field, or HuggingFace's default where the document leaves it out.
template <typename T>
T field(const json& hf, const char* key, T fallback, const std::string& label) {
  const auto it = hf.find(key);
  if (it == hf.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    throw InputError(label + ": /" + key + ": " + it->dump() + " is not of the expected type");
  }
}

std::string activation_of(const std::string& hf_activation, const char* key, const std::string& label) {
  if (hf_activation.rfind("gelu", 0) == 0) return "gelu";  // gelu, gelu_new, gelu_fast, gelu_pytorch_tanh
  if (hf_activation == "silu" || hf_activation == "swish") return "silu";
  throw InputError(label + ": /" + key + ": '" + hf_activation +
                   "' is not an activation papaya's transformer MLP has (gelu, silu)");
}

int seq_len_of(std::optional<int> seq_len, int positions, const std::string& label) {
  const int length = seq_len.value_or(std::min(positions, default_seq_len_cap));
  if (length < 1) throw InputError(label + ": --seq-len: " + std::to_string(length) + " is not a length");
  if (length > positions) {
    throw InputError(label + ": --seq-len " + std::to_string(length) + " is past the " + std::to_string(positions) +
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
  out["mlp_ratio"] = static_cast<double>(field(hf, "n_inner", 4 * d, label)) / d;
  out["activation"] =
      activation_of(field<std::string>(hf, "activation_function", "gelu_new", label), "activation_function", label);
  out["dropout"] = field(hf, "resid_pdrop", 0.1, label);
  out["seq_len"] = seq_len_of(seq_len, field(hf, "n_positions", 1024, label), label);
  out["vocab"] = field(hf, "vocab_size", 50257, label);
  return out;
}

// The classes of a classification head: id2label's entries, else
// num_labels (PretrainedConfig's default: 2).
int classes_of(const json& hf, const std::string& label) {
  const auto labels = hf.find("id2label");
  if (labels != hf.end() && labels->is_object() && !labels->empty()) return static_cast<int>(labels->size());
  return field(hf, "num_labels", 2, label);
}

// ViTConfig: hidden_size 768, num_hidden_layers 12, num_attention_heads 12,
// intermediate_size 3072, hidden_act gelu, hidden_dropout_prob 0,
// image_size 224, patch_size 16, num_channels 3.
json vit(const json& hf, json out, const std::string& label, std::optional<int> seq_len) {
  if (seq_len) throw InputError(label + ": --seq-len: a ViT's sequence is its patches (image_size / patch_size, squared, + 1)");
  const int d = field(hf, "hidden_size", 768, label);
  out["family"] = "vit";
  out["layers"] = field(hf, "num_hidden_layers", 12, label);
  out["d_model"] = d;
  out["heads"] = field(hf, "num_attention_heads", 12, label);
  out["mlp_ratio"] = static_cast<double>(field(hf, "intermediate_size", 3072, label)) / d;
  out["activation"] = activation_of(field<std::string>(hf, "hidden_act", "gelu", label), "hidden_act", label);
  const double dropout = field(hf, "hidden_dropout_prob", 0.0, label);
  if (dropout > 0) out["dropout"] = dropout;
  out["image_size"] = field(hf, "image_size", 224, label);
  out["patch"] = field(hf, "patch_size", 16, label);
  out["channels"] = field(hf, "num_channels", 3, label);
  out["classes"] = classes_of(hf, label);
  return out;
}

}  // namespace

bool is_hf_config(const json& doc) { return doc.is_object() && doc.contains("model_type") && !doc.contains("family"); }

const char* supported_hf_model_types() { return "gpt2, vit"; }

json network_config_from_hf(const json& hf, const std::string& name, const std::string& label, std::optional<int> seq_len) {
  const auto type_field = hf.find("model_type");
  if (type_field == hf.end() || !type_field->is_string()) throw InputError(label + ": /model_type: expected a string");
  const std::string type = type_field->get<std::string>();
  json out = {{"name", name}, {"description", "imported from a HuggingFace " + type + " config"}};
  if (type == "gpt2") return gpt2(hf, std::move(out), label, seq_len);
  if (type == "vit") return vit(hf, std::move(out), label, seq_len);
  const auto needs = unbuilt().find(type);
  if (needs != unbuilt().end()) {
    throw InputError(label + ": /model_type: '" + type + "' needs " + needs->second +
                     ", which papaya does not build yet (supported: " + supported_hf_model_types() + ")");
  }
  throw InputError(label + ": /model_type: '" + type +
                   "' is not a supported model type (supported: " + supported_hf_model_types() + ")");
}

}  // namespace papaya::model
