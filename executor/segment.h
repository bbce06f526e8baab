#pragma once
// A segment: a block of layers with one input and one output (a transformer
// block, a residual block), the unit that checkpointing recomputes.
#include <torch/torch.h>

#include <string>

#include "model/strategy.h"

namespace papaya::executor {

class Segment : public torch::nn::Module {
 public:
  const std::string& path() const { return path_; }
  void set_path(std::string path) { path_ = std::move(path); }

  const model::SegmentStrategy& strategy() const { return strategy_; }
  void set_strategy(model::SegmentStrategy strategy) { strategy_ = std::move(strategy); }

  // Runs the block: what the network calls. Checkpointed when the strategy
  // says recompute and autograd records.
  torch::Tensor run(torch::Tensor x);

  // The block's layers, as the network would run them without checkpointing.
  torch::Tensor run_layers(torch::Tensor x) { return forward(std::move(x)); }

  // Whether the block draws random numbers (a dropout): only then does its
  // recomputation need the generators' state of its forward.
  virtual bool draws_random();
  // The state its forward moves besides its outputs, put back after a
  // recomputation so that it moves once per step, as without checkpointing:
  // its layers' running_state() (batch-norm running statistics), not every
  // buffer (a QLoRA base's codes are buffers: a copy of them was held
  // through each recomputation).
  virtual std::vector<torch::Tensor> running_state();
  // The parameters its layers compute with: a checkpoint's inputs, so that
  // its backward runs even where the block's input needs no gradient (the
  // first block of a network).
  virtual std::vector<torch::Tensor> weights() { return parameters(); }

 protected:
  virtual torch::Tensor forward(torch::Tensor x) = 0;

 private:
  std::string path_;
  model::SegmentStrategy strategy_;
};

}  // namespace papaya::executor
