#pragma once
// The two matrix products and the softmax inside attention. Heads are laid
// out (batch, heads, tokens, head_dim), each tensor contiguous, so that each
// saved tensor is its own storage and a strategy on one frees it. k and v may
// have fewer heads than q (grouped-query attention): each serves a group of
// consecutive query heads, read in place rather than repeated per head.
#include "executor/layer.h"
#include "executor/layers/sequence_tables.h"

namespace papaya::executor {

// (batch, heads, tokens, d) as (batch, kv_heads, group·tokens, d): a group's
// query heads stacked along the tokens, so that one product with the group's
// k or v serves them all. A view of a contiguous tensor.
torch::Tensor by_kv_group(const torch::Tensor& t, int64_t kv_heads);

// scores = q k^T / sqrt(head_dim), masked above the diagonal when causal.
// Saves q and k (k with its own heads).
class AttentionScores : public Layer {
 public:
  // `tables`: the network's, shared by its layers (causal only).
  AttentionScores(int64_t head_dim, bool causal, std::shared_ptr<SequenceTables> tables);
  torch::Tensor forward(torch::Tensor q, torch::Tensor k);
  torch::Tensor run(const std::vector<torch::Tensor>& in, const Batch&) override { return forward(in.at(0), in.at(1)); }
  double scale;
  bool causal;
  // True above the diagonal: the network's, kept across steps.
  const torch::Tensor& causal_mask(int64_t n, const torch::Device& device) { return tables_->causal_mask(n, device); }

 private:
  std::shared_ptr<SequenceTables> tables_;
};

// Softmax over the last dimension; saves its output.
class Softmax : public Layer {
 public:
  Softmax();
  torch::Tensor forward(torch::Tensor x);
  torch::Tensor run(const std::vector<torch::Tensor>& in, const Batch&) override { return forward(in.at(0)); }
};

// context = probs v; saves probs and v (v with its own heads).
class AttentionContext : public Layer {
 public:
  AttentionContext();
  torch::Tensor forward(torch::Tensor probs, torch::Tensor v);
  torch::Tensor run(const std::vector<torch::Tensor>& in, const Batch&) override { return forward(in.at(0), in.at(1)); }
};

}  // namespace papaya::executor
