#pragma once
// The core of attention: one fused layer (executor/layers/fused_attention.h),
// or materialized as scores, softmax, an optional dropout, context. These run
// layer by layer, or, where the plan recomputes the softmax's output
// (Korthikanti et al.'s selective recompute), as one checkpoint: forward
// keeps q, k and v as their slots say (the scores' and the context's) and,
// with a dropout, the random state, and nothing the core makes; backward
// restores them, runs the core again with autograd on the layers' native
// path and differentiates it.
#include <memory>

#include "executor/layers/attention.h"
#include "executor/layers/elementwise.h"
#include "executor/layers/fused_attention.h"
#include "executor/layers/sequence_tables.h"
#include "model/catalog/network_config.h"

namespace papaya::executor {

struct AttentionCore {
  std::shared_ptr<FusedAttention> fused;  // or the four below
  std::shared_ptr<AttentionScores> scores;
  std::shared_ptr<Softmax> softmax;
  std::shared_ptr<Dropout> drop;  // or none
  std::shared_ptr<AttentionContext> context;

  // Whether the plan recomputes it: the softmax's output is recomputed.
  bool recomputed() const;
  // The context of q, k and v (batch, heads, tokens, head_dim); each let go
  // once the layer that reads it has run.
  torch::Tensor run(torch::Tensor q, torch::Tensor k, torch::Tensor v) const;
  // Layer by layer, as the plan stores each slot.
  torch::Tensor layers(torch::Tensor q, torch::Tensor k, torch::Tensor v) const;
};

// The core `c` says, its layers registered on `parent` (fused, or scores,
// softmax, drop, context): causal where `causal`, within a sliding window of
// `window` keys (0: none), its scale, soft cap and sinks the config's.
AttentionCore attention_core_of(torch::nn::Module& parent, const model::TransformerConfig& c, bool causal, int64_t window,
                                const std::shared_ptr<SequenceTables>& tables);

}  // namespace papaya::executor
