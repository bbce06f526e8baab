#include "model/catalog/parameter_count.h"

#include "model/catalog/layer_parameters.h"

namespace papaya::model {

int64_t trainable_parameter_count(const NetworkConfig& config) {
  if (config.family == Family::torchscript) return config.torchscript().parameters;
  int64_t n = 0;
  for (const LayerParameters& l : layer_parameters(config)) n += l.trained ? l.count : 0;
  return n;
}

namespace {

// Parameters of no layer, never trained, fp32: a mixture's selection bias,
// one an expert (DeepSeek-V3's, which a rule outside the gradient adjusts).
int64_t selection_bias_count(const NetworkConfig& config) {
  if (!std::holds_alternative<TransformerConfig>(config.body)) return 0;
  const TransformerConfig& t = config.transformer();
  if (!t.moe || !t.moe->selection_bias) return 0;
  int64_t mixtures = 0;
  for (int i = 0; i < t.layers; ++i) mixtures += t.is_moe_block(i) ? 1 : 0;
  // Each multi-token prediction module's block is of the kind of the block after the last.
  if (t.multi_token_prediction && t.is_moe_block(t.layers)) mixtures += t.multi_token_prediction->depth;
  return t.moe->experts * mixtures;
}

}  // namespace

double static_state_bytes(const NetworkConfig& config) {
  if (config.family == Family::torchscript) return 16.0 * static_cast<double>(config.torchscript().parameters);
  double weights = 0;
  for (const LayerParameters& l : layer_parameters(config)) weights += static_cast<double>(l.stored_bytes);
  return weights + 12.0 * static_cast<double>(trainable_parameter_count(config)) +
         4.0 * static_cast<double>(selection_bias_count(config));
}

int64_t parameter_count(const NetworkConfig& config) {
  if (config.family == Family::torchscript) return config.torchscript().parameters;
  int64_t n = selection_bias_count(config);
  for (const LayerParameters& l : layer_parameters(config)) n += l.count;
  return n;
}

}  // namespace papaya::model
