#pragma once
// Network configs (configs/networks/*.json): what the executor builds. A
// network is named by its config name ("gpt-tiny") or by a path to a file.
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

namespace papaya::model {

enum class Family { gpt, bert, vit, resnet, mlp };

struct TransformerConfig {
  int layers = 0;
  int d_model = 0;
  int heads = 0;
  double mlp_ratio = 4.0;
  std::string activation = "gelu";  // gelu | silu | swiglu
  std::string norm = "layernorm";   // layernorm | rmsnorm
  double dropout = 0.0;
  int seq_len = 0;                              // gpt, bert; vit: derived (patches + class token)
  int vocab = 0;                                // gpt, bert
  int classes = 0;                              // bert, vit
  int image_size = 0, patch = 0, channels = 3;  // vit

  int mlp_hidden() const;
  int head_dim() const { return d_model / heads; }
};

struct ResNetConfig {
  std::string block = "bottleneck";  // basic | bottleneck
  std::vector<int> stages;           // blocks per stage
  int width = 64;                    // channels of the stem and first stage
  int image_size = 224, channels = 3, classes = 1000;
};

struct MlpConfig {
  int input = 0;
  std::vector<int> hidden;
  int classes = 0;
  std::string activation = "relu";  // relu | gelu | silu
  double dropout = 0.0;
};

struct NetworkConfig {
  std::string name;
  std::string description;
  std::string source;  // the file it was read from
  // The papaya config document it was parsed from (an imported HuggingFace
  // config's conversion): what profiles and training states record.
  nlohmann::json document;
  Family family = Family::mlp;
  std::variant<TransformerConfig, ResNetConfig, MlpConfig> body;

  const TransformerConfig& transformer() const { return std::get<TransformerConfig>(body); }
  const ResNetConfig& resnet() const { return std::get<ResNetConfig>(body); }
  const MlpConfig& mlp() const { return std::get<MlpConfig>(body); }
  // Tokens (or patches) per sample, 1 for networks without a sequence.
  int sequence_length() const;
};

std::string to_string(Family family);

// Loads a config by name (configs/networks/<name>.json) or by path (anything
// with a '/' or ending in .json). Throws InputError naming the file, the JSON
// path and what was expected.
NetworkConfig load_network_config(const std::string& name_or_path);

// Parses and validates a config document, a papaya one or a HuggingFace
// config.json (model/hf_config.h; named after `label`'s file name); `label`
// names it in errors.
NetworkConfig parse_network_config(const nlohmann::json& doc, const std::string& label);

// Names of the shipped configs, sorted.
std::vector<std::string> shipped_network_names();

}  // namespace papaya::model
