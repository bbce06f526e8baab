#pragma once
// Layers with weight matrices or tables: linear, embeddings, class token.
#include <optional>

#include "executor/layer.h"
#include "executor/layers/fp8_linear.h"
#include "executor/networks/tensor_group.h"

namespace papaya::executor {

// y = x W^T + b. Saves its input, which only its weight's gradient needs:
// frozen, it saves nothing. With a stored weight other than fp32 it is
// frozen from the start and its weight is no parameter: it is loaded in the
// compute dtype for the forward's matmul and again for the backward's.
class Linear : public Layer {
 public:
  Linear(int64_t in, int64_t out, bool bias = true, model::WeightFormat stored = model::WeightFormat::fp32);
  torch::Tensor forward(torch::Tensor x);
  torch::Tensor run(const std::vector<torch::Tensor>& in, const Batch&) override { return forward(in.at(0)); }
  void freeze() override;
  bool frozen() const { return frozen_; }
  const StoredWeight* stored_weight() const override { return stored_ ? &*stored_ : nullptr; }
  // Runs its products in FP8 as `recipe` does (fp8_linear.h), where its
  // weight is a parameter (not a QLoRA base's codes); none: in its compute
  // dtype. Returns whether it does.
  bool set_fp8(model::Fp8Recipe recipe);
  const Fp8Linear& fp8() const { return fp8_; }
  // The stored weight in `dtype`, for one matmul: into load_scratch where
  // the network gave one (valid until its next load), else a tensor of its own.
  torch::Tensor loaded_weight(torch::ScalarType dtype) const;
  std::shared_ptr<LoadScratch> load_scratch;
  torch::Tensor weight, bias;  // weight undefined when stored, bias without one
  // Multiplies the output (a LoRA adapter's alpha / rank): inside the layer,
  // so that no op between it and what follows makes a gradient of its own.
  double output_scale = 1;
  // A column-parallel projection under sequence parallelism (Megatron's):
  // its input is this rank's share of the tokens, gathered from the group
  // for the product (on the MOM path); its slot stores the share alone,
  // gathered again in backward, and its input's gradient is this rank's
  // share of the group's sum. Null: the input is the product's.
  std::shared_ptr<TensorGroup> gathers_tokens;

 private:
  bool frozen_ = false;
  std::optional<StoredWeight> stored_;
  Fp8Linear fp8_;
};

// Token ids (int64) -> vectors. Saves the ids.
class Embedding : public Layer {
 public:
  // `scale`: the rows looked up are multiplied by it (Gemma's sqrt(dim)).
  Embedding(int64_t count, int64_t dim, double scale = 1);
  // A multi-token prediction module's: the table `tied_weight` (another
  // embedding's, not registered here), looked up at the ids `lookahead`
  // positions ahead of those forward is given (ids_ahead).
  Embedding(torch::Tensor tied_weight, double scale, int64_t lookahead);
  torch::Tensor forward(torch::Tensor ids);
  torch::Tensor run(const std::vector<torch::Tensor>&, const Batch& batch) override { return forward(batch.input); }
  std::vector<torch::Tensor> shared_parameters() const override;
  // Keeps `group`'s rank's share of the rows (vocab-parallel, Megatron's):
  // an id outside it looks up zeros, and the group's sum is the lookup.
  void split(const std::shared_ptr<TensorGroup>& group);
  torch::Tensor weight;
  double scale;

 private:
  std::shared_ptr<TensorGroup> group_;
  int64_t first_row_ = 0;
  int64_t lookahead_ = 0;
};

// Adds a learned vector per position to x (batch, positions, dim). Saves nothing.
class PositionEmbedding : public Layer {
 public:
  PositionEmbedding(int64_t positions, int64_t dim);
  torch::Tensor forward(torch::Tensor x);
  torch::Tensor run(const std::vector<torch::Tensor>& in, const Batch&) override { return forward(in.at(0)); }
  torch::Tensor weight;
};

// BERT's token-type embedding: a table of `types` rows, whose first (every
// token of a single-segment sample) is added to x (batch, tokens, dim).
// Saves nothing.
class TokenTypeEmbedding : public Layer {
 public:
  TokenTypeEmbedding(int64_t types, int64_t dim);
  torch::Tensor forward(torch::Tensor x);
  torch::Tensor run(const std::vector<torch::Tensor>& in, const Batch&) override { return forward(in.at(0)); }
  torch::Tensor weight;
};

// Prepends a learned class token to x (batch, tokens, dim). Saves nothing.
class ClassToken : public Layer {
 public:
  explicit ClassToken(int64_t dim);
  torch::Tensor forward(torch::Tensor x);
  torch::Tensor run(const std::vector<torch::Tensor>& in, const Batch&) override { return forward(in.at(0)); }
  torch::Tensor token;
};

}  // namespace papaya::executor
