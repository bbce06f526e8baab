#pragma once
// Element-wise layers: activations, dropout, and the gate product of SwiGLU.
#include "executor/layer.h"

namespace papaya::executor {

// gelu and silu save their input; relu, tanh and sigmoid save their output.
class Activation : public Layer {
 public:
  explicit Activation(const std::string& kind);  // gelu | silu | relu | tanh | sigmoid
  torch::Tensor forward(torch::Tensor x);
  torch::Tensor run(const std::vector<torch::Tensor>& in, const Batch&) override { return forward(in.at(0)); }
  // Inverted (GELU/SiLU): how the output is stored, as the layer that saves
  // it stores it, so that one copy serves both.
  StoreSpec output_spec;
  StoreSpec* inverted_output_spec() override { return &output_spec; }
};

namespace moms {
// The activation of `layer`'s kind (gelu, silu, relu, tanh) on `x`, its one
// slot stored as the layer's spec says; an inverted GELU/SiLU stores its
// output as `output_spec`. Activation's forward under a plan, and an imported
// network's activation modules.
torch::Tensor activation(const Layer& layer, const StoreSpec& output_spec, const torch::Tensor& x);
}  // namespace moms

// Inverted dropout; saves its boolean mask.
class Dropout : public Layer {
 public:
  explicit Dropout(double p);
  torch::Tensor forward(torch::Tensor x);
  torch::Tensor run(const std::vector<torch::Tensor>& in, const Batch&) override { return forward(in.at(0)); }
  bool draws_random() const override { return true; }
  double p;
};

// a * b (the gate of SwiGLU; an expert's output times its routing weight,
// which broadcasts); saves both.
class Mul : public Layer {
 public:
  Mul();
  torch::Tensor forward(torch::Tensor a, torch::Tensor b);
  torch::Tensor run(const std::vector<torch::Tensor>& in, const Batch&) override { return forward(in.at(0), in.at(1)); }
};

}  // namespace papaya::executor
