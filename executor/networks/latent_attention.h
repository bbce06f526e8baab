#pragma once
// Multi-head latent attention (DeepSeek-V2/V3; model::LatentAttentionConfig):
// q through a latent (q_a, its norm, q_b) or one projection (q); k and v
// from one latent (kv_a, its norm, kv_b) beside a rotated key part kv_a
// makes once for every head; fused or materialized attention over heads of
// rope + nope q/k dimensions and their own value dimensions; the output
// projection (proj). Each head's q and k lay their rotated dimensions first
// (the rotation's layer rotates a head's leading ones), which changes
// neither the work nor what is saved. What is kept for backward is what
// each layer saves: the projections their inputs (the latents, normalized),
// the norms theirs, attention q, k, v, its output and log-sum-exp.
#include <memory>

#include "executor/layers/elementwise.h"
#include "executor/layers/norm.h"
#include "executor/layers/rotary.h"
#include "executor/networks/attention_core.h"
#include "executor/networks/lora.h"

namespace papaya::executor {

class LatentAttention : public torch::nn::Module {
 public:
  LatentAttention(const model::TransformerConfig& c, int64_t window, double rotary_base, const model::RopeScaling& scaling,
                  const std::shared_ptr<SequenceTables>& tables);
  torch::Tensor forward(const torch::Tensor& x);

  Projection q_a, q_b, q, kv_a, kv_b, proj;  // q_a and q_b, or q
  std::shared_ptr<Norm> q_norm, kv_norm;     // q_norm with q_a
  std::shared_ptr<Rotary> rope_q, rope_k;
  AttentionCore core;
  std::shared_ptr<Dropout> proj_drop;  // or none

 private:
  int64_t heads_;
  model::LatentAttentionConfig shape_;
};

}  // namespace papaya::executor
