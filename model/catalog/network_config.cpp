#include "model/catalog/network_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "model/catalog/hf_config.h"
#include "model/catalog/input_spec.h"
#include "model/catalog/layer_pattern.h"
#include "model/error.h"
#include "model/json_file.h"

namespace papaya::model {
namespace fs = std::filesystem;
using nlohmann::json;

int TransformerConfig::mlp_hidden() const {
  return mlp_width > 0 ? mlp_width : static_cast<int>(std::lround(mlp_ratio * d_model));
}

// As HuggingFace's GPT-NeoX: int(head_size · rotary_pct).
int TransformerConfig::rotary_dims() const { return latent ? latent->rope_dim : static_cast<int>(head_dim() * rotary_fraction); }

int TransformerConfig::window_of(int i) const {
  if (sliding_window == 0) return 0;
  return window_blocks.empty() || std::find(window_blocks.begin(), window_blocks.end(), i) != window_blocks.end() ? sliding_window
                                                                                                                  : 0;
}

bool TransformerConfig::is_moe_block(int i) const {
  return moe && (i + 1) % moe->sparse_step == 0 &&
         std::find(moe->dense_blocks.begin(), moe->dense_blocks.end(), i) == moe->dense_blocks.end();
}

int NetworkConfig::smallest_batch() const { return family == Family::torchscript ? 2 : 1; }

const MoeConfig* NetworkConfig::mixture() const {
  const auto* t = std::get_if<TransformerConfig>(&body);
  return t && t->moe ? &*t->moe : nullptr;
}

int NetworkConfig::sequence_length() const {
  if (family == Family::vit) {
    const auto& t = transformer();
    const int side = t.image_size / t.patch;
    return side * side + 1;
  }
  if (family == Family::gpt || family == Family::bert) return transformer().seq_len;
  return 1;
}

int NetworkConfig::position_rows() const {
  if (family == Family::vit) return sequence_length();
  if (family == Family::gpt || family == Family::bert) return transformer().rotary() ? 0 : transformer().max_positions;
  return 0;
}

std::string to_string(Family family) {
  switch (family) {
    case Family::gpt: return "gpt";
    case Family::bert: return "bert";
    case Family::vit: return "vit";
    case Family::resnet: return "resnet";
    case Family::mlp: return "mlp";
    case Family::torchscript: return "torchscript";
  }
  return "?";
}

namespace {

Family family_of(const json& doc, const std::string& label) {
  if (!doc.is_object()) throw InputError(label + ": /: expected an object");
  const auto it = doc.find("family");
  if (it == doc.end() || !it->is_string()) {
    throw InputError(label + ": /family: expected one of gpt, bert, vit, resnet, mlp, torchscript");
  }
  for (Family f : {Family::gpt, Family::bert, Family::vit, Family::resnet, Family::mlp, Family::torchscript}) {
    if (*it == to_string(f)) return f;
  }
  throw InputError(label + ": /family: '" + it->get<std::string>() + "' is not one of gpt, bert, vit, resnet, mlp, torchscript");
}

// Checks the schema cannot express: relations between fields.
void require(bool ok, const std::string& label, const std::string& pointer, const std::string& message) {
  if (!ok) throw InputError(label + ": " + pointer + ": " + message);
}

// The schemas bound integers from below only: one past an int would wrap
// (heads 2^32 read as 0, then divided by). Every integer of a config, at
// any depth (a mixture's groups, a latent attention's ranks), is read as an
// int but a mixture's routing_unit, which is an int64.
void require_ints_fit(const json& value, const std::string& label, const std::string& pointer = "") {
  if (value.is_object() || value.is_array()) {
    for (const auto& [key, item] : value.items()) {  // an array's keys are its indices
      if (key != "routing_unit") require_ints_fit(item, label, pointer + "/" + key);
    }
    return;
  }
  bool fits = true;
  if (value.is_number_unsigned()) {
    fits = value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int>::max());
  } else if (value.is_number_integer()) {
    const int64_t i = value.get<int64_t>();
    fits = i >= std::numeric_limits<int>::min() && i <= std::numeric_limits<int>::max();
  }
  require(fits, label, pointer, value.dump() + " is out of range");
}

// The transformer schema is shared by gpt, bert and vit: keys that belong to
// another family are rejected here.
void reject_foreign_keys(const json& doc, Family family, const std::string& label) {
  const std::vector<std::string> text_keys = {"seq_len", "vocab"};
  const std::vector<std::string> image_keys = {"image_size", "patch", "channels"};
  const auto& foreign = family == Family::vit ? text_keys : image_keys;
  for (const auto& key : foreign) {
    require(!doc.contains(key), label, "/" + key, "not an option of a " + to_string(family) + " network");
  }
  if (family == Family::gpt) require(!doc.contains("classes"), label, "/classes", "not an option of a gpt network");
  for (const char* key : {"tied_head", "logit_softcap"}) {
    if (family != Family::gpt) {
      require(!doc.contains(key), label, std::string("/") + key, "not an option of a " + to_string(family) + " network");
    }
  }
  for (const char* key : {"token_types", "pooler"}) {
    if (family != Family::bert) {
      require(!doc.contains(key), label, std::string("/") + key, "not an option of a " + to_string(family) + " network");
    }
  }
  if (family == Family::vit) {
    for (const char* key : {"positions", "rotary_fraction", "rotary_base", "max_positions"}) {
      require(!doc.contains(key), label, std::string("/") + key,
              "not an option of a vit network (its positions are learned, one per patch)");
    }
  }
}

// The roles a network's projections answer to: q, k, v or qkv; o; gate,
// up, down (SwiGLU) or fc1, fc2.

}  // namespace

bool busiest_share_fits(const MoeConfig& moe, double share) {
  return share * moe.experts >= 1 - 1e-9 && share * moe.experts_per_token <= 1 + 1e-9;
}

std::string busiest_share_range(const MoeConfig& moe) {
  return "from 1/" + std::to_string(moe.experts) + " (balanced) to 1/" + std::to_string(moe.experts_per_token) + " (every token)";
}

namespace {

MoeConfig parse_moe(const json& doc, const TransformerConfig& t, const std::string& label) {
  MoeConfig moe;
  moe.experts = doc.at("experts");
  moe.experts_per_token = doc.at("experts_per_token");
  moe.expert_hidden = doc.at("expert_hidden");
  moe.shared_hidden = doc.value("shared_hidden", 0);
  moe.shared_gate = doc.value("shared_gate", false);
  moe.sparse_step = doc.value("sparse_step", 1);
  moe.dense_blocks = doc.value("dense_blocks", std::vector<int>{});
  moe.normalize_top_k = doc.value("normalize_top_k", true);
  moe.aux_loss = doc.value("aux_loss", moe.aux_loss);
  if (doc.contains("busiest_share")) {
    const double share = doc.at("busiest_share");
    require(busiest_share_fits(moe, share), label, "/moe/busiest_share", "a share " + busiest_share_range(moe));
    moe.busiest_share = share;
  }
  moe.routing_unit = doc.value("routing_unit", int64_t{0});
  moe.profiled_experts = doc.value("profiled_experts", 0);
  moe.busier_experts = doc.value("busier_experts", 0);
  moe.router_bias = doc.value("router_bias", moe.router_bias);
  moe.expert_bias = doc.value("expert_bias", moe.expert_bias);
  if (doc.contains("clamped_swiglu")) {
    const json& clamped = doc.at("clamped_swiglu");
    moe.swiglu_alpha = clamped.value("alpha", moe.swiglu_alpha);
    moe.swiglu_limit = clamped.at("limit");
  }
  moe.sigmoid_scores = doc.value("scoring", std::string("softmax")) == "sigmoid";
  moe.selection_bias = doc.value("selection_bias", moe.selection_bias);
  moe.groups = doc.value("groups", moe.groups);
  moe.groups_per_token = doc.value("groups_per_token", moe.groups);
  moe.routed_scale = doc.value("routed_scale", moe.routed_scale);
  require(moe.experts % moe.groups == 0, label, "/moe/groups",
          std::to_string(moe.groups) + " groups do not divide " + std::to_string(moe.experts) + " experts");
  require(moe.groups == 1 || moe.experts / moe.groups >= 2, label, "/moe/groups",
          "a group is ranked by its two best experts: at least 2 a group");
  require(moe.groups_per_token <= moe.groups, label, "/moe/groups_per_token",
          std::to_string(moe.groups_per_token) + " groups a token, of the " + std::to_string(moe.groups) + " there are");
  require(moe.experts_per_token <= moe.groups_per_token * (moe.experts / moe.groups), label, "/moe/experts_per_token",
          std::to_string(moe.experts_per_token) + " experts a token, of the " +
              std::to_string(moe.groups_per_token * (moe.experts / moe.groups)) + " in its groups");
  require(moe.routing_unit == 0 || moe.busiest_share, label, "/moe/routing_unit",
          "shares out forced routings: give busiest_share");
  require(moe.profiled_experts == 0 || moe.busiest_share, label, "/moe/profiled_experts",
          "stands a few experts for all where routing is forced: give busiest_share");
  require(moe.busier_experts == 0 || moe.profiled_experts > 0, label, "/moe/busier_experts",
          "splits the experts profiled_experts builds into runs: give profiled_experts");
  require(moe.busier_experts < moe.experts - 1, label, "/moe/busier_experts",
          std::to_string(moe.busier_experts) + " of the " + std::to_string(moe.experts - 1) + " experts but the last");
  if (moe.profiled_experts > 0) {
    const int standing = standing_experts(moe.experts, moe.busier_experts);
    require(moe.profiled_experts == standing && standing < moe.experts, label, "/moe/profiled_experts",
            std::to_string(moe.profiled_experts) + ": " + std::to_string(standing) + " of the " + std::to_string(moe.experts) +
                " experts stand for all where " + std::to_string(moe.busier_experts) + " of them get a routing more");
  }
  require(moe.experts_per_token <= moe.experts, label, "/moe/experts_per_token",
          std::to_string(moe.experts_per_token) + " experts a token, of the " + std::to_string(moe.experts) + " there are");
  require(t.activation == "swiglu", label, "/moe", "experts are SwiGLU MLPs: \"activation\": \"swiglu\"");
  require(!moe.shared_gate || moe.shared_hidden > 0, label, "/moe/shared_gate", "gates a shared expert: give shared_hidden");
  return moe;
}

LatentAttentionConfig parse_latent_attention(const json& doc, const TransformerConfig& t, Family family,
                                             const std::string& label) {
  const json& given = doc.at("latent_attention");
  LatentAttentionConfig latent;
  latent.q_rank = given.value("q_rank", 0);
  latent.kv_rank = given.at("kv_rank");
  latent.nope_dim = given.at("nope_dim");
  latent.rope_dim = given.at("rope_dim");
  latent.value_dim = given.at("value_dim");
  const std::string where = "/latent_attention";
  require(family == Family::gpt && t.rotary(), label, where, "a gpt network's, with \"positions\": \"rotary\"");
  require(latent.rope_dim % 2 == 0, label, where + "/rope_dim", "rotary embeddings rotate an even number of dimensions");
  for (const char* key : {"head_dim", "rotary_fraction", "fused_qkv", "qk_norm", "qkv_bias"}) {
    require(!doc.contains(key), label, std::string("/") + key, "not an option of latent attention (its heads are its own)");
  }
  require(t.kv_heads == t.heads, label, "/kv_heads", "latent attention makes k and v for every head");
  return latent;
}

// PEFT's q and v where the config names no targets: a latent attention's
// up projections (q's whole where it has no latent), or one q/k/v projection.
std::vector<std::string> default_lora_targets(const TransformerConfig& t) {
  if (t.latent) return {t.latent->q_rank > 0 ? "q_b" : "q", "kv_b"};
  return t.fused_qkv ? std::vector<std::string>{"qkv"} : std::vector<std::string>{"q", "v"};
}

LoraConfig parse_lora(const json& doc, const TransformerConfig& t, const std::string& label) {
  LoraConfig lora;
  lora.rank = doc.at("rank");
  lora.alpha = doc.value("alpha", lora.alpha);
  lora.dropout = doc.value("dropout", lora.dropout);
  lora.base_weights = parse_weight_format(doc.value("base_weights", std::string("fp32")), label + ": /lora/base_weights");
  lora.targets = doc.contains("targets") ? doc.at("targets").get<std::vector<std::string>>() : default_lora_targets(t);
  const std::vector<std::string> roles = projection_roles(t);
  std::string known;
  for (const auto& role : roles) known += (known.empty() ? "" : ", ") + role;
  for (size_t i = 0; i < lora.targets.size(); ++i) {
    require(std::find(roles.begin(), roles.end(), lora.targets[i]) != roles.end(), label, "/lora/targets/" + std::to_string(i),
            "'" + lora.targets[i] + "' names no projection of this network (its projections: " + known + ")");
  }
  return lora;
}

TransformerConfig parse_transformer(const json& doc, Family family, const std::string& label) {
  TransformerConfig t;
  t.layers = doc.at("layers");
  t.d_model = doc.at("d_model");
  t.heads = doc.at("heads");
  t.kv_heads = doc.value("kv_heads", t.heads);
  t.mlp_ratio = doc.value("mlp_ratio", t.mlp_ratio);
  t.mlp_width = doc.value("mlp_hidden", t.mlp_width);
  t.activation = doc.value("activation", t.activation);
  t.norm = doc.value("norm", t.norm);
  t.dropout = doc.value("dropout", t.dropout);
  t.attention_dropout = doc.value("attention_dropout", t.dropout);
  t.positions = doc.value("positions", t.positions);
  t.rotary_fraction = doc.value("rotary_fraction", t.rotary_fraction);
  t.rotary_base = doc.value("rotary_base", t.rotary_base);
  if (doc.contains("rope_scaling")) {
    const json& s = doc.at("rope_scaling");
    t.rope_scaling.type = s.at("type");
    t.rope_scaling.factor = s.at("factor");
    t.rope_scaling.low_freq_factor = s.value("low_freq_factor", t.rope_scaling.low_freq_factor);
    t.rope_scaling.high_freq_factor = s.value("high_freq_factor", t.rope_scaling.high_freq_factor);
    t.rope_scaling.original_max_positions = s.value("original_max_positions", t.rope_scaling.original_max_positions);
    t.rope_scaling.beta_fast = s.value("beta_fast", t.rope_scaling.beta_fast);
    t.rope_scaling.beta_slow = s.value("beta_slow", t.rope_scaling.beta_slow);
    t.rope_scaling.attention_factor = s.value("attention_factor", t.rope_scaling.attention_factor);
    t.rope_scaling.truncate = s.value("truncate", t.rope_scaling.truncate);
    t.rope_scaling.short_factors = s.value("short_factors", std::vector<double>{});
    t.rope_scaling.long_factors = s.value("long_factors", std::vector<double>{});
    for (const char* key : {"beta_fast", "beta_slow", "truncate"}) {
      require(!s.contains(key) || t.rope_scaling.type == "yarn", label, std::string("/rope_scaling/") + key, "only with yarn");
    }
    require(!s.contains("attention_factor") || t.rope_scaling.type == "yarn" || t.rope_scaling.type == "longrope", label,
            "/rope_scaling/attention_factor", "only with yarn or longrope");
    for (const char* key : {"short_factors", "long_factors"}) {
      require(s.contains(key) == (t.rope_scaling.type == "longrope"), label, std::string("/rope_scaling/") + key,
              "longrope's, and needed by it");
    }
    require(t.rope_scaling.type != "yarn" || t.rope_scaling.beta_fast > t.rope_scaling.beta_slow, label,
            "/rope_scaling/beta_fast", "must be above beta_slow");
    require(t.positions == "rotary", label, "/rope_scaling", "only with \"positions\": \"rotary\"");
    require(t.rope_scaling.type != "llama3" || t.rope_scaling.high_freq_factor > t.rope_scaling.low_freq_factor, label,
            "/rope_scaling/high_freq_factor", "must be above low_freq_factor");
  }
  t.qkv_bias = doc.value("qkv_bias", t.qkv_bias);
  t.fused_qkv = doc.value("fused_qkv", t.fused_qkv);
  t.fused_gate_up = doc.value("fused_gate_up", t.fused_gate_up);
  t.attention = doc.value("attention", t.attention);
  t.proj_bias = doc.value("proj_bias", t.proj_bias);
  t.mlp_bias = doc.value("mlp_bias", !t.gated());  // Llama's MLP has none
  t.tied_head = doc.value("tied_head", t.tied_head);
  t.parallel_residual = doc.value("parallel_residual", t.parallel_residual);
  t.post_norms = doc.value("post_norms", t.post_norms);
  t.scaled_embedding = doc.value("scaled_embedding", t.scaled_embedding);
  t.attention_scale = doc.value("attention_scale", t.attention_scale);
  t.attention_softcap = doc.value("attention_softcap", t.attention_softcap);
  require(t.attention_softcap == 0 || t.fused_attention(), label, "/attention_softcap",
          "caps the scores inside fused attention: \"attention\": \"fused\"");
  t.logit_softcap = doc.value("logit_softcap", t.logit_softcap);
  t.attention_sinks = doc.value("attention_sinks", t.attention_sinks);
  require(!t.attention_sinks || t.fused_attention(), label, "/attention_sinks",
          "a logit a head inside fused attention: \"attention\": \"fused\"");
  require(!t.post_norms || family != Family::bert, label, "/post_norms",
          "normalizes a pre-norm block's branches; a bert block is post-norm");
  require(!t.post_norms || !t.parallel_residual, label, "/post_norms", "not built with \"parallel_residual\"");
  t.token_types = doc.value("token_types", t.token_types);
  t.pooler = doc.value("pooler", t.pooler);
  t.head_width = doc.value("head_dim", t.head_width);
  if (doc.contains("latent_attention")) {
    t.latent = parse_latent_attention(doc, t, family, label);
    t.fused_qkv = t.qkv_bias = false;  // its projections have neither
  }
  require(t.head_width > 0 || t.latent || t.d_model % t.heads == 0, label, "/heads",
          std::to_string(t.heads) + " heads do not divide d_model " + std::to_string(t.d_model) + " (give head_dim)");
  require(t.heads % t.kv_heads == 0, label, "/kv_heads",
          std::to_string(t.kv_heads) + " k/v heads do not divide " + std::to_string(t.heads) + " heads");
  require(doc.contains("mlp_hidden") ? !doc.contains("mlp_ratio") : true, label, "/mlp_hidden",
          "give the MLP's width or its ratio to d_model, not both");
  require(t.mlp_hidden() >= 1, label, "/mlp_ratio", "gives an MLP of no units");
  require(!doc.contains("rotary_fraction") || t.rotary(), label, "/rotary_fraction", "only with \"positions\": \"rotary\"");
  require(!t.rotary() || (t.rotary_dims() >= 2 && t.rotary_dims() % 2 == 0), label, "/rotary_fraction",
          "rotates " + std::to_string(t.rotary_dims()) + " of each head's " + std::to_string(t.head_dim()) +
              " dimensions; rotary embeddings rotate an even number, at least 2");
  for (const auto& [key, factors] :
       {std::pair{"short_factors", &t.rope_scaling.short_factors}, std::pair{"long_factors", &t.rope_scaling.long_factors}}) {
    require(factors->empty() || static_cast<int>(factors->size()) * 2 == t.rotary_dims(), label,
            std::string("/rope_scaling/") + key,
            std::to_string(factors->size()) + " factors for the " + std::to_string(t.rotary_dims() / 2) + " rotated pairs");
  }
  if (family == Family::vit) {
    t.image_size = doc.at("image_size");
    t.patch = doc.at("patch");
    t.channels = doc.value("channels", t.channels);
    t.classes = doc.at("classes");
    require(t.image_size % t.patch == 0, label, "/patch",
            "patch " + std::to_string(t.patch) + " does not divide image_size " + std::to_string(t.image_size));
    // sequence_length(): the patches and the class token, an int.
    const int64_t side = t.image_size / t.patch;
    require(side * side < std::numeric_limits<int>::max(), label, "/patch",
            std::to_string(side * side) + " patches are too many");
  } else {
    t.seq_len = doc.at("seq_len");
    t.vocab = doc.at("vocab");
    require(!doc.contains("max_positions") || !t.rotary(), label, "/max_positions", "rotary positions have no table");
    t.max_positions = doc.value("max_positions", t.seq_len);
    require(t.max_positions >= t.seq_len, label, "/max_positions",
            std::to_string(t.max_positions) + " positions are fewer than seq_len " + std::to_string(t.seq_len));
    if (family == Family::bert) t.classes = doc.at("classes");
  }
  require(!t.fused_gate_up || t.gated(), label, "/fused_gate_up",
          "joins a gated MLP's gate and up: \"activation\": \"swiglu\" or \"geglu\"");
  require(!t.fused_gate_up || !doc.contains("moe"), label, "/fused_gate_up", "not built for a mixture of experts' experts");
  if (doc.contains("moe")) t.moe = parse_moe(doc.at("moe"), t, label);
  if (doc.contains("sliding_window")) {
    const json& window = doc.at("sliding_window");
    t.sliding_window = window.at("tokens");
    t.window_blocks = window.value("blocks", std::vector<int>{});
    t.window_rotary_base = window.value("rotary_base", t.window_rotary_base);
    require(t.window_rotary_base == 0 || t.rotary(), label, "/sliding_window/rotary_base", "only with \"positions\": \"rotary\"");
    require(family == Family::gpt && t.fused_attention(), label, "/sliding_window",
            "a window of causal attention: a gpt network's, with \"attention\": \"fused\"");
    for (size_t i = 0; i < t.window_blocks.size(); ++i) {
      require(t.window_blocks[i] < t.layers, label, "/sliding_window/blocks/" + std::to_string(i),
              "block " + std::to_string(t.window_blocks[i]) + " of " + std::to_string(t.layers));
    }
  }
  const std::string qk_norm = doc.value("qk_norm", std::string("none"));
  t.qk_norm = qk_norm == "projection" ? QkNorm::projection : qk_norm == "head" ? QkNorm::head : QkNorm::none;
  require(t.qk_norm == QkNorm::none || !t.fused_qkv, label, "/qk_norm", "normalizes q and k projections: \"fused_qkv\": false");
  if (doc.contains("lora")) t.lora = parse_lora(doc.at("lora"), t, label);
  if (doc.contains("multi_token_prediction")) {
    require(family == Family::gpt, label, "/multi_token_prediction", "predicts further tokens of a gpt network");
    const json& mtp = doc.at("multi_token_prediction");
    MultiTokenPredictionConfig m;
    m.depth = mtp.value("depth", m.depth);
    m.loss_scale = mtp.value("loss_scale", m.loss_scale);
    require(m.depth < t.seq_len, label, "/multi_token_prediction/depth",
            std::to_string(m.depth) + " tokens ahead leave no position of seq_len " + std::to_string(t.seq_len) + " to train on");
    t.multi_token_prediction = m;
  }
  return t;
}

ResNetConfig parse_resnet(const json& doc, const std::string& label) {
  ResNetConfig r;
  r.block = doc.at("block");
  r.stages = doc.at("stages").get<std::vector<int>>();
  r.width = doc.value("width", r.width);
  r.image_size = doc.at("image_size");
  r.channels = doc.value("channels", r.channels);
  r.classes = doc.at("classes");
  // The stem halves the image twice, each further stage once more.
  const int reduction = 4 << (r.stages.size() - 1);
  require(r.image_size >= reduction, label, "/image_size",
          "must be at least " + std::to_string(reduction) + " for " + std::to_string(r.stages.size()) + " stages");
  return r;
}

MlpConfig parse_mlp(const json& doc) {
  MlpConfig m;
  m.input = doc.at("input");
  m.hidden = doc.at("hidden").get<std::vector<int>>();
  m.classes = doc.at("classes");
  m.activation = doc.value("activation", m.activation);
  m.dropout = doc.value("dropout", m.dropout);
  return m;
}

// Each input must parse as a spec, as it will when the archive is loaded.
TorchScriptConfig parse_torchscript(const json& doc, const std::string& label) {
  TorchScriptConfig t;
  t.archive = doc.at("archive");
  t.inputs = doc.at("inputs").get<std::vector<std::string>>();
  for (size_t i = 0; i < t.inputs.size(); ++i) parse_input_spec(t.inputs[i], label + ": /inputs/" + std::to_string(i));
  t.loss = doc.value("loss", "");
  t.parameters = doc.at("parameters");
  return t;
}

// A papaya config trained at `seq_len` tokens. A learned position table
// keeps the rows the config gives it (its seq_len where it names none).
json with_seq_len(json doc, int seq_len, const std::string& label) {
  if (!doc.is_object() || !doc.contains("seq_len")) {
    const std::string family = doc.is_object() ? doc.value("family", std::string("?")) : "?";
    throw InputError(label + ": a " + family + " network has no token sequence to set the length of");
  }
  require(seq_len >= 1, label, "sequence length", std::to_string(seq_len) + " is not a length");
  if (doc.value("positions", std::string("learned")) == "learned") {
    if (!doc.contains("max_positions")) doc["max_positions"] = doc.at("seq_len");
    const json& rows = doc.at("max_positions");
    require(!rows.is_number_integer() || seq_len <= rows.get<int64_t>(), label, "sequence length",
            std::to_string(seq_len) + " is past the " + rows.dump() + " positions of its learned position table");
  }
  doc["seq_len"] = seq_len;
  return doc;
}

}  // namespace

std::vector<std::string> projection_roles(const TransformerConfig& t) {
  std::vector<std::string> roles = t.latent      ? latent_roles(*t.latent)
                                   : t.fused_qkv ? std::vector<std::string>{"qkv"}
                                                 : std::vector<std::string>{"q", "k", "v"};
  roles.push_back("o");
  for (const char* role : !t.gated()        ? std::vector<const char*>{"fc1", "fc2"}
                          : t.fused_gate_up ? std::vector<const char*>{"gate_up", "down"}
                                            : std::vector<const char*>{"gate", "up", "down"}) {
    roles.push_back(role);
  }
  return roles;
}

std::vector<std::string> latent_roles(const LatentAttentionConfig& latent) {
  return latent.q_rank > 0 ? std::vector<std::string>{"q_a", "q_b", "kv_a", "kv_b"}
                           : std::vector<std::string>{"q", "kv_a", "kv_b"};
}

std::pair<int64_t, int64_t> projection_shape(const TransformerConfig& t, const std::string& role) {
  const int64_t d = t.d_model, h = t.mlp_hidden(), kv = static_cast<int64_t>(t.kv_heads) * t.head_dim();
  const int64_t q = t.attention_width();
  if (t.latent) {
    const LatentAttentionConfig& l = *t.latent;
    const int64_t heads = t.heads, q_heads = heads * t.head_dim();
    if (role == "q") return {d, q_heads};
    if (role == "q_a") return {d, l.q_rank};
    if (role == "q_b") return {l.q_rank, q_heads};
    if (role == "kv_a") return {d, l.kv_rank + l.rope_dim};
    if (role == "kv_b") return {l.kv_rank, heads * (l.nope_dim + l.value_dim)};
  }
  if (role == "q") return {d, q};
  if (role == "o") return {q, d};
  if (role == "k" || role == "v") return {d, kv};
  if (role == "qkv") return {d, q + 2 * kv};
  if (role == "down" || role == "fc2") return {h, d};
  if (role == "gate_up") return {d, 2 * h};
  return {d, h};  // gate, up, fc1
}

NetworkConfig parse_network_config(const json& doc, const std::string& label) {
  if (is_hf_config(doc)) return parse_network_config(network_config_from_hf(doc, fs::path(label).stem().string(), label), label);
  NetworkConfig config;
  config.document = doc;
  config.family = family_of(doc, label);
  require_ints_fit(doc, label);
  switch (config.family) {
    case Family::gpt:
    case Family::bert:
    case Family::vit:
      validate_json(doc, "network-transformer", label);
      reject_foreign_keys(doc, config.family, label);
      config.body = parse_transformer(doc, config.family, label);
      break;
    case Family::resnet:
      validate_json(doc, "network-resnet", label);
      config.body = parse_resnet(doc, label);
      break;
    case Family::mlp:
      validate_json(doc, "network-mlp", label);
      config.body = parse_mlp(doc);
      break;
    case Family::torchscript:
      validate_json(doc, "network-torchscript", label);
      config.body = parse_torchscript(doc, label);
      break;
  }
  config.name = doc.at("name");
  config.description = doc.value("description", "");
  config.precision = doc.value("precision", config.precision);
  if (doc.contains("freeze")) {
    config.freeze = doc.at("freeze").get<std::vector<std::string>>();
    for (size_t i = 0; i < config.freeze.size(); ++i)
      check_layer_pattern(config.freeze[i], label + ": /freeze/" + std::to_string(i));
  }
  return config;
}

NetworkConfig load_network_config(const std::string& name_or_path, std::optional<int> seq_len) {
  const bool is_path = name_or_path.find('/') != std::string::npos || fs::path(name_or_path).extension() == ".json";
  const std::string path = is_path ? name_or_path : (fs::path(config_dir()) / "networks" / (name_or_path + ".json")).string();
  if (!fs::exists(path)) {
    if (is_path) throw InputError(path + ": no such network config file");
    std::string known;
    for (const auto& n : shipped_network_names()) known += (known.empty() ? "" : ", ") + n;
    throw InputError("unknown network '" + name_or_path + "' (known: " + known + "; or give a path to a .json config)");
  }
  json doc = read_json_file(path, "network config");
  if (is_hf_config(doc)) {
    doc = network_config_from_hf(doc, fs::path(path).stem().string(), path, seq_len);
  } else if (seq_len) {
    doc = with_seq_len(std::move(doc), *seq_len, path);
  }
  NetworkConfig config = parse_network_config(doc, path);
  config.source = path;
  return config;
}

namespace {

// Where `config` came from, for messages: its file, else its name.
std::string origin(const NetworkConfig& config) { return config.source.empty() ? config.name : config.source; }

// `config`'s document, changed, parsed again; read from the same file.
NetworkConfig reparsed(const NetworkConfig& config, const json& doc, const std::string& where) {
  NetworkConfig out = parse_network_config(doc, where);
  out.source = config.source;
  return out;
}

}  // namespace

NetworkConfig at_seq_len(const NetworkConfig& config, int seq_len) {
  return reparsed(config, with_seq_len(config.document, seq_len, origin(config)), origin(config));
}

NetworkConfig with_lora(const NetworkConfig& config, const LoraConfig& lora) {
  const std::string where = origin(config) + ": --lora";
  if (!std::holds_alternative<TransformerConfig>(config.body)) {
    throw InputError(where + ": LoRA adapts a transformer's projections; a " + to_string(config.family) + " network has none");
  }
  json doc = config.document;
  doc["lora"] = {
      {"rank", lora.rank}, {"alpha", lora.alpha}, {"dropout", lora.dropout}, {"base_weights", to_string(lora.base_weights)}};
  if (!lora.targets.empty()) doc["lora"]["targets"] = lora.targets;
  return reparsed(config, doc, origin(config));
}

NetworkConfig with_attention(const NetworkConfig& config, const std::string& attention) {
  if (!std::holds_alternative<TransformerConfig>(config.body)) {
    throw InputError(origin(config) + ": a " + to_string(config.family) + " network has no attention to fuse or materialize");
  }
  json doc = config.document;
  doc["attention"] = attention;
  return reparsed(config, doc, origin(config));
}

NetworkConfig with_expert_routing(const NetworkConfig& config, double busiest_share) {
  if (!config.mixture()) {
    throw InputError(origin(config) + ": no mixture of experts to route");
  }
  json doc = config.document;
  doc["moe"]["busiest_share"] = busiest_share;
  return reparsed(config, doc, origin(config));
}

ForcedRouting forced_routing(const MoeConfig& moe, int64_t routings) {
  ForcedRouting r;
  r.unit = moe.routing_unit > 0 && routings % moe.routing_unit == 0 ? moe.routing_unit : routings;
  r.repeats = routings / r.unit;
  r.busiest = std::min(r.unit / moe.experts_per_token,
                       static_cast<int64_t>(std::llround(moe.busiest_share.value_or(0) * static_cast<double>(r.unit))));
  const int64_t rest = r.unit - r.busiest, others = moe.experts - 1;
  r.each = rest / others;
  r.more = rest % others;
  return r;
}

std::optional<int> busier_experts_at(const NetworkConfig& config, const std::vector<int>& batches) {
  const MoeConfig* moe = config.mixture();
  if (!moe || !moe->busiest_share || batches.empty()) return std::nullopt;
  std::optional<int64_t> more;
  for (int batch : batches) {
    const int64_t routings = static_cast<int64_t>(batch) * config.transformer().seq_len * moe->experts_per_token;
    const int64_t at_batch = forced_routing(*moe, routings).more;
    if (more && *more != at_batch) return std::nullopt;
    more = at_batch;
  }
  return static_cast<int>(*more);
}

std::vector<ExpertRun> alike_expert_runs(int experts, int busier) {
  std::vector<ExpertRun> runs;
  for (const ExpertRun run : {ExpertRun{0, busier}, ExpertRun{busier, experts - 1 - busier}, ExpertRun{experts - 1, 1}}) {
    if (run.count > 0) runs.push_back(run);
  }
  return runs;
}

std::vector<int> profiled_expert_ids(const std::vector<ExpertRun>& runs) {
  std::vector<int> ids;
  for (const ExpertRun& run : runs) {
    for (int e = 0; e < (run.count >= 3 ? 2 : run.count); ++e) ids.push_back(run.first + e);
  }
  return ids;
}

int standing_experts(int experts, int busier) {
  return static_cast<int>(profiled_expert_ids(alike_expert_runs(experts, busier)).size());
}

std::vector<int> MoeConfig::built_expert_ids() const {
  if (profiled_experts > 0) return profiled_expert_ids(alike_expert_runs(experts, busier_experts));
  std::vector<int> ids(static_cast<size_t>(experts));
  for (int e = 0; e < experts; ++e) ids[static_cast<size_t>(e)] = e;
  return ids;
}

NetworkConfig with_profiled_experts(const NetworkConfig& config, std::optional<int> busier) {
  const MoeConfig* moe = config.mixture();
  if (!moe) {
    throw InputError(origin(config) + ": no mixture of experts to profile a few of");
  }
  json doc = config.document;
  doc["moe"].erase("profiled_experts");
  doc["moe"].erase("busier_experts");
  if (busier) {
    doc["moe"]["profiled_experts"] = standing_experts(moe->experts, *busier);
    if (*busier > 0) doc["moe"]["busier_experts"] = *busier;
  }
  return reparsed(config, doc, origin(config));
}

NetworkConfig with_freeze(const NetworkConfig& config, const std::vector<std::string>& patterns) {
  if (config.family == Family::torchscript) {
    throw InputError(origin(config) +
                     ": freezing layers by name applies to papaya's networks; a TorchScript archive's "
                     "frozen weights are those without requires_grad");
  }
  json doc = config.document;
  doc["freeze"] = patterns;
  return reparsed(config, doc, origin(config));
}

std::vector<int> block_kinds(const TransformerConfig& t) {
  std::vector<std::pair<int, bool>> seen_kinds;  // (window, a mixture), as first seen
  std::vector<int> kinds;
  for (int i = 0; i < t.layers; ++i) {
    const std::pair<int, bool> kind{t.window_of(i), t.is_moe_block(i)};
    const auto seen = std::find(seen_kinds.begin(), seen_kinds.end(), kind);
    kinds.push_back(static_cast<int>(seen - seen_kinds.begin()));
    if (seen == seen_kinds.end()) seen_kinds.push_back(kind);
  }
  return kinds;
}

int blocks_with_every_kind(const TransformerConfig& t) {
  const std::vector<int> kinds = block_kinds(t);
  if (kinds.empty()) return 0;
  const int last_new =
      static_cast<int>(std::find(kinds.begin(), kinds.end(), *std::max_element(kinds.begin(), kinds.end())) - kinds.begin());
  int blocks = std::max(2, last_new + 1);
  while (blocks < t.layers && t.is_moe_block(blocks - 2) != t.is_moe_block(blocks - 1)) ++blocks;
  return std::min(t.layers, blocks);
}

NetworkConfig with_blocks(const NetworkConfig& config, int blocks) {
  const std::string where = origin(config) + ": " + std::to_string(blocks) + " blocks";
  if (!std::holds_alternative<TransformerConfig>(config.body)) {
    throw InputError(where + ": a " + to_string(config.family) + " network has no identical blocks to scale");
  }
  const int layers = config.transformer().layers;
  if (blocks < 2 || blocks > layers) {
    throw InputError(where + ": profile 2 to " + std::to_string(layers) + " of its " + std::to_string(layers) +
                     " blocks (two show what one more block holds)");
  }
  json doc = config.document;
  doc["layers"] = blocks;
  // The windowed blocks among those kept (none left: no window).
  if (doc.contains("sliding_window") && doc["sliding_window"].contains("blocks")) {
    std::vector<int> kept;
    for (int b : config.transformer().window_blocks) {
      if (b < blocks) kept.push_back(b);
    }
    if (kept.empty()) {
      doc.erase("sliding_window");
    } else {
      doc["sliding_window"]["blocks"] = kept;
    }
  }
  return reparsed(config, doc, where);
}

std::vector<std::string> shipped_network_names() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(fs::path(config_dir()) / "networks")) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace papaya::model
