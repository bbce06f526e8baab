#include "model/catalog/layer_parameters.h"

#include <algorithm>
#include <map>

#include "model/catalog/layer_pattern.h"
#include "model/error.h"

namespace papaya::model {
namespace {

struct Layers {
  void add(const std::string& path, int64_t count) { add(path, count, 4 * count); }
  void add(const std::string& path, int64_t count, int64_t stored_bytes) {
    if (count > 0) out.push_back({path, count, true, stored_bytes});
  }
  std::vector<LayerParameters> out;
};

// A norm over `width` features (the stream's by default): a weight, and a bias unless RMSNorm.
int64_t norm_count(const TransformerConfig& t, int64_t width = 0) {
  const int64_t features = width > 0 ? width : t.d_model;
  return t.norm == "rmsnorm" ? features : 2 * features;
}

// A linear of `role` (in -> out) named `name` under `prefix`, its weight
// stored as a LoRA base's are, and its LoRA adapter where targeted.
void add_linear(Layers& layers, const TransformerConfig& t, const std::string& prefix, const std::string& name,
                const std::string& role, int64_t in, int64_t out, bool bias) {
  const auto& lora = t.lora;
  const int64_t weight_bytes = lora ? stored_weight_bytes(out, in, lora->base_weights) : 4 * in * out;
  layers.add(prefix + name, in * out + (bias ? out : 0), weight_bytes + (bias ? 4 * out : 0));
  if (!lora || std::find(lora->targets.begin(), lora->targets.end(), role) == lora->targets.end()) return;
  layers.add(prefix + name + "_lora_a", in * lora->rank);
  layers.add(prefix + name + "_lora_b", static_cast<int64_t>(lora->rank) * out);
}

// A projection of `role` named `name` under `prefix`, and its LoRA adapter.
void add_projection(Layers& layers, const TransformerConfig& t, const std::string& prefix, const std::string& name,
                    const std::string& role, bool bias) {
  const auto [in, out] = projection_shape(t, role);
  add_linear(layers, t, prefix, name, role, in, out, bias);
}

// A SwiGLU expert of `hidden` under `prefix`: gate (fc1), up, down (fc2),
// each a projection of its role, with biases where `bias`.
void add_expert(Layers& layers, const TransformerConfig& t, const std::string& prefix, int64_t hidden, bool bias) {
  add_linear(layers, t, prefix, "fc1", "gate", t.d_model, hidden, bias);
  add_linear(layers, t, prefix, "up", "up", t.d_model, hidden, bias);
  add_linear(layers, t, prefix, "fc2", "down", hidden, t.d_model, bias);
}

// A mixture of experts: its router, each expert, and the shared expert with
// its gate.
void add_experts(Layers& layers, const TransformerConfig& t, const std::string& prefix) {
  const MoeConfig& moe = *t.moe;
  const int64_t d = t.d_model;
  layers.add(prefix + "router", d * moe.experts + (moe.router_bias ? moe.experts : 0));
  for (int e = 0; e < moe.built_experts(); ++e) {
    add_expert(layers, t, prefix + "experts." + std::to_string(e) + ".", moe.expert_hidden, moe.expert_bias);
  }
  if (moe.shared_hidden == 0) return;
  if (moe.shared_gate) layers.add(prefix + "shared_gate", d);  // weights the shared expert: computed first
  add_expert(layers, t, prefix + "shared.", moe.shared_hidden, false);
}

// A latent attention's projections and their latents' norms, in the order
// forward runs them: q's (down, norm, up; or one), then k's and v's.
void add_latent_projections(Layers& layers, const TransformerConfig& t, const std::string& prefix) {
  const LatentAttentionConfig& latent = *t.latent;
  if (latent.q_rank > 0) {
    add_projection(layers, t, prefix, "q_a", "q_a", false);
    layers.add(prefix + "q_norm", norm_count(t, latent.q_rank));
    add_projection(layers, t, prefix, "q_b", "q_b", false);
  } else {
    add_projection(layers, t, prefix, "q", "q", false);
  }
  add_projection(layers, t, prefix, "kv_a", "kv_a", false);
  layers.add(prefix + "kv_norm", norm_count(t, latent.kv_rank));
  add_projection(layers, t, prefix, "kv_b", "kv_b", false);
}

// Block `index` under `prefix` ("blocks.3."), in the order forward runs its layers.
void add_block(Layers& layers, const TransformerConfig& t, const std::string& block, int index, bool post_norm) {
  const int64_t kv = static_cast<int64_t>(t.kv_heads) * t.head_dim();
  if (!post_norm) layers.add(block + "ln1", norm_count(t));
  if (t.latent) {
    add_latent_projections(layers, t, block + "attn.");
  } else if (t.fused_qkv) {
    add_projection(layers, t, block + "attn.", "qkv", "qkv", t.qkv_bias);
  } else {
    add_projection(layers, t, block + "attn.", "q", "q", t.qkv_bias);
    add_projection(layers, t, block + "attn.", "k", "k", t.qkv_bias);
    add_projection(layers, t, block + "attn.", "v", "v", t.qkv_bias);
  }
  if (t.qk_norm == QkNorm::projection) {
    layers.add(block + "attn.q_norm", t.attention_width());
    layers.add(block + "attn.k_norm", kv);
  } else if (t.qk_norm == QkNorm::head) {
    layers.add(block + "attn.q_norm", t.head_dim());
    layers.add(block + "attn.k_norm", t.head_dim());
  }
  if (t.attention_sinks) layers.add(block + "attn.fused", t.heads);
  add_projection(layers, t, block + "attn.", "proj", "o", t.proj_bias);
  if (t.post_norms) layers.add(block + "post_attn_norm", norm_count(t));
  if (post_norm) layers.add(block + "ln1", norm_count(t));
  if (!post_norm) layers.add(block + "ln2", norm_count(t));
  if (t.is_moe_block(index)) {
    add_experts(layers, t, block + "moe.");
  } else {
    const bool gated = t.gated();
    add_projection(layers, t, block + "mlp.", "fc1", !gated ? "fc1" : t.fused_gate_up ? "gate_up" : "gate", t.mlp_bias);
    if (gated && !t.fused_gate_up) add_projection(layers, t, block + "mlp.", "up", "up", t.mlp_bias);
    add_projection(layers, t, block + "mlp.", "fc2", gated ? "down" : "fc2", t.mlp_bias);
  }
  if (t.post_norms) layers.add(block + "post_mlp_norm", norm_count(t));
  if (post_norm) layers.add(block + "ln2", norm_count(t));
}

// Each multi-token prediction module: its norms, its projection of the two
// joined, its block and its norm. Its embedding and LM head compute with the
// main ones' weights: no parameters of their own.
void add_multi_token_prediction(Layers& layers, const TransformerConfig& t) {
  for (int k = 0; k < t.multi_token_prediction->depth; ++k) {
    const std::string module = "mtp." + std::to_string(k) + ".";
    layers.add(module + "enorm", norm_count(t));
    layers.add(module + "hnorm", norm_count(t));
    add_linear(layers, t, module, "proj", "mtp_proj", 2 * static_cast<int64_t>(t.d_model), t.d_model, false);
    add_block(layers, t, module + "block.", t.layers, false);
    layers.add(module + "norm", norm_count(t));
  }
}

void add_transformer(Layers& layers, const NetworkConfig& config) {
  const TransformerConfig& t = config.transformer();
  const int64_t d = t.d_model;
  if (config.family == Family::vit) {
    layers.add("patch_emb", t.channels * t.patch * t.patch * d + d);
    layers.add("cls_token", d);
  } else {
    layers.add("tok_emb", t.vocab * d);
  }
  layers.add("type_emb", t.token_types * d);
  layers.add("pos_emb", config.position_rows() * d);
  if (config.family == Family::bert) layers.add("emb_norm", norm_count(t));
  const bool post_norm = config.family == Family::bert;
  for (int i = 0; i < t.layers; ++i) add_block(layers, t, "blocks." + std::to_string(i) + ".", i, post_norm);
  if (config.family != Family::bert) layers.add("ln_f", norm_count(t));
  if (config.family == Family::gpt) {
    if (!t.tied_head) layers.add("lm_head", t.vocab * d);
    if (t.multi_token_prediction) add_multi_token_prediction(layers, t);
    return;
  }
  if (t.pooler) layers.add("pooler", d * d + d);
  layers.add("head", d * t.classes + t.classes);
}

void add_resnet(Layers& layers, const ResNetConfig& r) {
  const auto conv = [](int64_t in, int64_t out, int64_t k) { return in * out * k * k; };
  layers.add("conv1", conv(r.channels, r.width, 7));
  layers.add("bn1", 2 * static_cast<int64_t>(r.width));
  const bool bottleneck = r.block == "bottleneck";
  int64_t in = r.width;
  for (size_t stage = 0; stage < r.stages.size(); ++stage) {
    const int64_t width = static_cast<int64_t>(r.width) << stage;
    const int64_t out = bottleneck ? 4 * width : width;
    for (int i = 0; i < r.stages[stage]; ++i) {
      const std::string block = "layer" + std::to_string(stage + 1) + "." + std::to_string(i) + ".";
      const bool downsample = (stage > 0 && i == 0) || in != out;
      const std::vector<std::pair<int64_t, int64_t>> units =
          bottleneck ? std::vector<std::pair<int64_t, int64_t>>{{in, width}, {width, width}, {width, out}}
                     : std::vector<std::pair<int64_t, int64_t>>{{in, width}, {width, out}};
      for (size_t u = 0; u < units.size(); ++u) {
        const int64_t kernel = bottleneck && u != 1 ? 1 : 3;
        layers.add(block + "conv" + std::to_string(u + 1), conv(units[u].first, units[u].second, kernel));
        layers.add(block + "bn" + std::to_string(u + 1), 2 * units[u].second);
      }
      if (downsample) {
        layers.add(block + "downsample.conv", conv(in, out, 1));
        layers.add(block + "downsample.bn", 2 * out);
      }
      in = out;
    }
  }
  layers.add("fc", in * r.classes + r.classes);
}

void add_mlp(Layers& layers, const MlpConfig& m) {
  int64_t in = m.input;
  for (size_t i = 0; i < m.hidden.size(); ++i) {
    layers.add("blocks." + std::to_string(i) + ".fc", in * m.hidden[i] + m.hidden[i]);
    in = m.hidden[i];
  }
  layers.add("head", in * m.classes + m.classes);
}

}  // namespace

bool frozen_layer(const NetworkConfig& config, const std::string& path) {
  const bool lora = std::holds_alternative<TransformerConfig>(config.body) && config.transformer().lora;
  if (lora && path.find("_lora_") == std::string::npos) return true;
  return std::any_of(config.freeze.begin(), config.freeze.end(),
                     [&](const std::string& pattern) { return matches_layer_pattern(pattern, path); });
}

std::vector<LayerParameters> layer_parameters(const NetworkConfig& config) {
  Layers layers;
  switch (config.family) {
    case Family::resnet: add_resnet(layers, config.resnet()); break;
    case Family::mlp: add_mlp(layers, config.mlp()); break;
    case Family::torchscript: return {};
    default: add_transformer(layers, config); break;
  }
  for (LayerParameters& l : layers.out) l.trained = !frozen_layer(config, l.path);
  return layers.out;
}

void check_frozen_layers(const NetworkConfig& config, const std::string& where) {
  const std::vector<LayerParameters> layers = layer_parameters(config);
  for (const std::string& pattern : config.freeze) {
    const bool any = std::any_of(layers.begin(), layers.end(),
                                 [&](const LayerParameters& l) { return matches_layer_pattern(pattern, l.path); });
    if (!any) {
      std::string names;
      for (size_t i = 0; i < layers.size() && i < 6; ++i) names += (i ? ", " : "") + layers[i].path;
      throw InputError(where + ": '" + pattern + "' matches no layer with weights of " + config.name + " (its layers: " + names +
                       (layers.size() > 6 ? ", ...)" : ")"));
    }
  }
  if (!config.freeze.empty() && std::none_of(layers.begin(), layers.end(), [](const LayerParameters& l) { return l.trained; })) {
    throw InputError(where + ": freezes every layer with weights of " + config.name + ": nothing would train");
  }
}

void check_blocks_frozen_alike(const NetworkConfig& config, int profiled, const std::string& where) {
  const std::string last = "blocks." + std::to_string(profiled - 1) + ".";
  std::map<std::string, bool> pattern;  // the last profiled block's, by the path within a block
  const std::vector<LayerParameters> layers = layer_parameters(config);
  for (const LayerParameters& l : layers) {
    if (l.path.rfind(last, 0) == 0) pattern[l.path.substr(last.size())] = l.trained;
  }
  for (const LayerParameters& l : layers) {
    if (l.path.rfind("blocks.", 0) != 0) continue;
    const size_t dot = l.path.find('.', 7);
    if (std::stoi(l.path.substr(7, dot - 7)) < profiled) continue;
    const auto it = pattern.find(l.path.substr(dot + 1));
    if (it != pattern.end() && it->second != l.trained) {
      throw InputError(where + ": " + l.path + " is " + (l.trained ? "trained" : "frozen") + " where " + last +
                       l.path.substr(dot + 1) + ", the last of the " + std::to_string(profiled) +
                       " blocks profiled, is not: freeze the blocks past them alike, or profile them all");
    }
  }
}

}  // namespace papaya::model
