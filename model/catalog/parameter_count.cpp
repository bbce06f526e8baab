#include "model/catalog/parameter_count.h"

#include "model/catalog/layer_parameters.h"

namespace papaya::model {

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
