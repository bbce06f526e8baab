#include "model/catalog/parameter_count.h"

#include <string>
#include <utility>

namespace papaya::model {
namespace {

int64_t transformer_count(const NetworkConfig& config) {
  const auto& t = config.transformer();
  const int64_t d = t.d_model, h = t.mlp_hidden(), kv = static_cast<int64_t>(t.kv_heads) * t.head_dim();
  const int64_t norm = t.norm == "rmsnorm" ? d : 2 * d;
  const int64_t attention = d * (d + 2 * kv) + (t.qkv_bias ? d + 2 * kv : 0) + d * d + (t.proj_bias ? d : 0);
  const int64_t mlp = t.activation == "swiglu" ? 3 * d * h + (t.mlp_bias ? 2 * h + d : 0)  // gate and up, down
                                               : 2 * d * h + (t.mlp_bias ? h + d : 0);
  int64_t n = t.layers * (2 * norm + attention + mlp) + static_cast<int64_t>(config.position_rows()) * d;
  switch (config.family) {
    case Family::gpt: return n + (t.tied_head ? 1 : 2) * t.vocab * d + norm;  // embedding (and head), final norm
    case Family::bert:                                                        // embedding norm, token types, pooler, classifier
      return n + t.vocab * d + norm + static_cast<int64_t>(t.token_types) * d + (t.pooler ? d * d + d : 0) + d * t.classes +
             t.classes;
    default:  // vit: patch embedding, class token, final norm, classifier
      return n + t.channels * t.patch * t.patch * d + d + d + norm + d * t.classes + t.classes;
  }
}

int64_t resnet_count(const ResNetConfig& r) {
  const bool bottleneck = r.block == "bottleneck";
  auto conv_bn = [](int64_t in, int64_t out, int64_t k) { return in * out * k * k + 2 * out; };
  int64_t n = conv_bn(r.channels, r.width, 7);
  int64_t in = r.width;
  for (size_t stage = 0; stage < r.stages.size(); ++stage) {
    const int64_t width = static_cast<int64_t>(r.width) << stage;
    const int64_t out = bottleneck ? 4 * width : width;
    for (int i = 0; i < r.stages[stage]; ++i) {
      const bool downsample = (stage > 0 && i == 0) || in != out;
      n += bottleneck ? conv_bn(in, width, 1) + conv_bn(width, width, 3) + conv_bn(width, out, 1)
                      : conv_bn(in, width, 3) + conv_bn(width, out, 3);
      if (downsample) n += conv_bn(in, out, 1);
      in = out;
    }
  }
  return n + in * r.classes + r.classes;
}

int64_t mlp_count(const MlpConfig& m) {
  int64_t n = 0, in = m.input;
  for (int width : m.hidden) {
    n += in * width + width;
    in = width;
  }
  return n + in * m.classes + m.classes;
}

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
  if (!std::holds_alternative<TransformerConfig>(config.body) || !config.transformer().lora) return parameter_count(config);
  const TransformerConfig& t = config.transformer();
  int64_t per_block = 0;
  for (const auto& role : t.lora->targets) {
    const auto [in, out] = projection_shape(t, role);
    per_block += static_cast<int64_t>(t.lora->rank) * (in + out);
  }
  return per_block * t.layers;
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
  switch (config.family) {
    case Family::resnet: return resnet_count(config.resnet());
    case Family::mlp: return mlp_count(config.mlp());
    case Family::torchscript: return config.torchscript().parameters;
    default:  // the base network and its adapters, as PEFT counts "all params"
      return transformer_count(config) + (config.transformer().lora ? trainable_parameter_count(config) : 0);
  }
}

}  // namespace papaya::model
