#pragma once
// A segment: a block of layers with one input and one output (a transformer
// block, a residual block), the unit that checkpointing recomputes.
#include <torch/torch.h>

#include <string>

namespace papaya::executor {

class Segment : public torch::nn::Module {
 public:
  const std::string& path() const { return path_; }
  void set_path(std::string path) { path_ = std::move(path); }

  // Runs the block: what the network calls.
  torch::Tensor run(torch::Tensor x) { return forward(std::move(x)); }

 protected:
  // The block's layers, as the native path runs them.
  virtual torch::Tensor forward(torch::Tensor x) = 0;

 private:
  std::string path_;
};

}  // namespace papaya::executor
