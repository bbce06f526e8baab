#include "model/catalog/parameter_count.h"

#include <string>
#include <utility>

#include "model/catalog/layer_parameters.h"

namespace papaya::model {
namespace {

// A projection's inputs and outputs by its role (model/catalog/network_config.h).
std::pair<int64_t, int64_t> projection_shape(const TransformerConfig& t, const std::string& role) {
  const int64_t d = t.d_model, h = t.mlp_hidden(), kv = static_cast<int64_t>(t.kv_heads) * t.head_dim();
  if (role == "q" || role == "o") return {d, d};
  if (role == "k" || role == "v") return {d, kv};
  if (role == "qkv") return {d, d + 2 * kv};
  if (role == "down" || role == "fc2") return {h, d};
  return {d, h};  // gate, up, fc1
}

}  // namespace

int64_t trainable_parameter_count(const NetworkConfig& config) {
  if (config.family == Family::torchscript) return config.torchscript().parameters;
  int64_t n = 0;
  for (const LayerParameters& l : layer_parameters(config)) n += l.trained ? l.count : 0;
  return n;
}

double static_state_bytes(const NetworkConfig& config) {
  double weights = 4.0 * static_cast<double>(parameter_count(config));
  if (std::holds_alternative<TransformerConfig>(config.body) && config.transformer().lora) {
    const TransformerConfig& t = config.transformer();
    for (const auto& role : projection_roles(t)) {  // every block's frozen projections, as stored
      const auto [in, out] = projection_shape(t, role);
      weights += static_cast<double>(t.layers) *
                 static_cast<double>(stored_weight_bytes(out, in, t.lora->base_weights) - 4 * in * out);
    }
  }
  return weights + 12.0 * static_cast<double>(trainable_parameter_count(config));
}

int64_t parameter_count(const NetworkConfig& config) {
  if (config.family == Family::torchscript) return config.torchscript().parameters;
  int64_t n = 0;
  for (const LayerParameters& l : layer_parameters(config)) n += l.count;
  return n;
}

}  // namespace papaya::model
