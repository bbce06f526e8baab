#include "model/catalog/transformer_shape.h"

#include "model/error.h"

namespace papaya::model {

TransformerShape transformer_shape(const NetworkConfig& config) {
  const auto* transformer = std::get_if<TransformerConfig>(&config.body);
  if (!transformer) throw InputError(config.name + " is no chain of transformer blocks");
  TransformerShape shape;
  shape.blocks = transformer->layers;
  shape.heads = transformer->heads;
  shape.kv_heads = transformer->kv_heads;
  shape.experts = config.mixture() ? config.mixture()->experts : 0;
  shape.tokens = config.sequence_length();
  shape.fused_attention = transformer->attention == "fused";
  if (const auto& m = transformer->multi_token_prediction) {
    shape.prediction_modules = m->depth;
    shape.prediction_loss_scale = m->loss_scale;
  }
  return shape;
}

}  // namespace papaya::model
