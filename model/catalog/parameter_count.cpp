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
  if (config.family == Family::torchscript) return 16.0 * static_cast<double>(config.torchscript().parameters);
  double weights = 0;
  for (const LayerParameters& l : layer_parameters(config)) weights += static_cast<double>(l.stored_bytes);
  return weights + 12.0 * static_cast<double>(trainable_parameter_count(config));
}

int64_t parameter_count(const NetworkConfig& config) {
  if (config.family == Family::torchscript) return config.torchscript().parameters;
  int64_t n = 0;
  for (const LayerParameters& l : layer_parameters(config)) n += l.count;
  return n;
}

}  // namespace papaya::model
