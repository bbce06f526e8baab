#pragma once
// HuggingFace config.json documents (those with a "model_type") as papaya
// network configs, with each type's field names and defaults as HuggingFace
// defines them. The types whose layers papaya builds are converted; the
// others are refused, naming what they need.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace papaya::model {

// A document with a "model_type" and no papaya "family".
bool is_hf_config(const nlohmann::json& doc);

// The papaya network config (a document parse_network_config reads) of a
// HuggingFace config, named `name`. `seq_len`: the training sequence length (default: the
// type's position count, at most 2048). Throws InputError, `label` first,
// for an unsupported model_type or field value.
nlohmann::json network_config_from_hf(const nlohmann::json& hf, const std::string& name, const std::string& label,
                                      std::optional<int> seq_len = std::nullopt);

// `net` (network_config_from_hf's of `hf`) with the config's multi-token
// prediction modules (num_nextn_predict_layers: DeepSeek-V3's), which
// HuggingFace's Trainer leaves out and DeepSeek and Megatron-LM pre-train
// with. Throws InputError, `label` first, where the config has none.
nlohmann::json with_multi_token_prediction(const nlohmann::json& hf, nlohmann::json net, const std::string& label);

// The model types converted.
const char* supported_hf_model_types();

}  // namespace papaya::model
