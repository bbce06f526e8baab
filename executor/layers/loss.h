#pragma once
// Loss layers: cross-entropy over class logits, and the language-model head
// (projection to the vocabulary and cross-entropy over every token).
#include "executor/layer.h"
#include "executor/networks/tensor_group.h"

namespace papaya::executor {

// Mean cross-entropy of logits (batch, classes) against class ids; saves the
// log-probabilities (computed in fp32).
class CrossEntropy : public Layer {
 public:
  CrossEntropy();
  torch::Tensor forward(torch::Tensor logits, torch::Tensor target);
  torch::Tensor run(const std::vector<torch::Tensor>& in, const Batch& batch) override { return forward(in.at(0), batch.target); }
};

// logits = x W^T with W the token embedding's (tied) weight or the head's
// own, soft-capped where `softcap` > 0, then mean cross-entropy over all
// tokens. Saves its input and the fp32 log-probabilities (capped: the fp32
// capped logits, as many bytes, that backward takes them from).
class LMHead : public Layer {
 public:
  explicit LMHead(torch::Tensor tied_weight);
  LMHead(int64_t vocab, int64_t dim);  // untied
  torch::Tensor forward(torch::Tensor x, torch::Tensor target);
  torch::Tensor run(const std::vector<torch::Tensor>& in, const Batch& batch) override { return forward(in.at(0), batch.target); }
  std::vector<torch::Tensor> shared_parameters() const override;
  // Computes `group`'s rank's share of the vocabulary (a tied weight: the
  // embedding's share, split with it): the loss is Megatron's vocab-parallel
  // cross-entropy, the softmax's maximum and sum and the targets' logits
  // summed over the group.
  void split(const std::shared_ptr<TensorGroup>& group);
  torch::Tensor weight;  // tied: not registered, owned by the embedding
  double softcap = 0;    // the logits capped at ±softcap (cap·tanh(z / cap), Gemma 2); 0: not capped
  // A multi-token prediction module's head: scored against the targets this
  // many positions ahead of those forward is given (targets_ahead), the last
  // ones left out; 0: the main head.
  int64_t lookahead = 0;

 private:
  // A frozen weight (a fine-tuned network's tied embedding) runs the
  // MOM-aware Function under every plan: autograd alone would keep the
  // input only for the weight's gradient, the Function keeps it for its
  // recomputed log-probabilities too, and keep's profile must hold what
  // the other plans hold (the model prices the slots from it).
  bool frozen_weight_in_training() const;
  std::shared_ptr<TensorGroup> group_;
  int64_t first_row_ = 0;
};

}  // namespace papaya::executor
