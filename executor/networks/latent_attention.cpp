#include "executor/networks/latent_attention.h"

namespace papaya::executor {

LatentAttention::LatentAttention(const model::TransformerConfig& c, int64_t window, double rotary_base,
                                 const model::RopeScaling& scaling, const std::shared_ptr<SequenceTables>& tables)
    : heads_(c.heads), shape_(*c.latent) {
  // Layers in the order forward runs them (model::layer_parameters lists them so).
  const auto projection = [&](const std::string& role) {
    const auto [in, out] = model::projection_shape(c, role);
    return Projection(*this, role, in, out, false, c, role);
  };
  if (shape_.q_rank > 0) {
    q_a = projection("q_a");
    q_norm = register_module("q_norm", std::make_shared<Norm>(c.norm, shape_.q_rank));
    q_b = projection("q_b");
  } else {
    q = projection("q");
  }
  kv_a = projection("kv_a");
  kv_norm = register_module("kv_norm", std::make_shared<Norm>(c.norm, shape_.kv_rank));
  kv_b = projection("kv_b");
  rope_q = register_module("rope_q", std::make_shared<Rotary>(shape_.rope_dim, rotary_base, tables, scaling));
  rope_k = register_module("rope_k", std::make_shared<Rotary>(shape_.rope_dim, rotary_base, tables, scaling));
  core = attention_core_of(*this, c, /*causal=*/true, window, tables);
  proj = Projection(*this, "proj", c.attention_width(), c.d_model, c.proj_bias, c, "o");
  if (c.dropout > 0) proj_drop = register_module("proj_drop", std::make_shared<Dropout>(c.dropout));
}

torch::Tensor LatentAttention::forward(const torch::Tensor& x) {
  const int64_t b = x.size(0), s = x.size(1);
  const int64_t rope = shape_.rope_dim, nope = shape_.nope_dim, kv_rank = shape_.kv_rank;
  // (b, s, heads·width) -> (b, heads, s, width), a view.
  const auto per_head = [&](const torch::Tensor& t) { return t.view({b, s, heads_, -1}).transpose(1, 2); };
  const torch::Tensor q_out = q_a ? q_b.forward(q_norm->forward(q_a.forward(x))) : q.forward(x);
  const torch::Tensor latent = kv_a.forward(x);  // (b, s, kv_rank + rope): the latent, then the shared key part
  const torch::Tensor kv = per_head(kv_b.forward(kv_norm->forward(latent.narrow(-1, 0, kv_rank))));
  const torch::Tensor v = kv.narrow(-1, nope, shape_.value_dim).contiguous();
  const torch::Tensor q_heads = rope_q->forward(per_head(q_out));  // contiguous, its leading rope dims rotated
  const torch::Tensor k_rope = rope_k->forward(latent.narrow(-1, kv_rank, rope).unsqueeze(1));  // (b, 1, s, rope)
  const torch::Tensor k = torch::cat({k_rope.expand({b, heads_, s, rope}), kv.narrow(-1, 0, nope)}, -1);
  torch::Tensor h = core.run(q_heads, k, v);
  h = proj.forward(h.transpose(1, 2).reshape({b, s, -1}));
  return proj_drop ? proj_drop->forward(h) : h;
}

}  // namespace papaya::executor
