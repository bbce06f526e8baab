#include "executor/layers/dense.h"

#include <cmath>

#include "executor/moms/functions.h"

namespace papaya::executor {

Linear::Linear(int64_t in, int64_t out, bool with_bias) : Layer(LayerKind::linear, {{"input", SlotKind::activation}}) {
  // torch.nn.Linear's initialisation: U(-1/sqrt(in), 1/sqrt(in)).
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));
  weight = register_parameter("weight", torch::empty({out, in}).uniform_(-bound, bound));
  if (with_bias) bias = register_parameter("bias", torch::empty({out}).uniform_(-bound, bound));
}

torch::Tensor Linear::forward(torch::Tensor x) {
  Scope scope(*this, {&x});
  if (uses_moms()) return scope.finish(moms::linear(*this, x, weight, bias));
  scope.saved("input", x);
  return scope.finish(torch::linear(x, cast(weight), bias.defined() ? cast(bias) : torch::Tensor()));
}

Embedding::Embedding(int64_t count, int64_t dim) : Layer(LayerKind::embedding, {{"ids", SlotKind::index}}) {
  weight = register_parameter("weight", torch::randn({count, dim}) * 0.02);
}

torch::Tensor Embedding::forward(torch::Tensor ids) {
  Scope scope(*this, {});
  scope.saved("ids", ids);
  // The rows are gathered in the table's dtype and only they are cast: a cast
  // of the table would copy all of it, and autograd would hold the copy.
  return scope.finish(torch::embedding(weight, ids).to(compute_dtype()));
}

PositionEmbedding::PositionEmbedding(int64_t positions, int64_t dim) : Layer(LayerKind::position, {}) {
  weight = register_parameter("weight", torch::randn({positions, dim}) * 0.02);
}

torch::Tensor PositionEmbedding::forward(torch::Tensor x) {
  Scope scope(*this, {&x});
  return scope.finish(x + cast(weight).narrow(0, 0, x.size(1)));
}

TokenTypeEmbedding::TokenTypeEmbedding(int64_t types, int64_t dim) : Layer(LayerKind::position, {}) {
  weight = register_parameter("weight", torch::randn({types, dim}) * 0.02);
}

torch::Tensor TokenTypeEmbedding::forward(torch::Tensor x) {
  Scope scope(*this, {&x});
  return scope.finish(x + cast(weight).select(0, 0));
}

ClassToken::ClassToken(int64_t dim) : Layer(LayerKind::class_token, {}) {
  token = register_parameter("token", torch::zeros({1, 1, dim}));
}

torch::Tensor ClassToken::forward(torch::Tensor x) {
  Scope scope(*this, {&x});
  return scope.finish(torch::cat({cast(token).expand({x.size(0), 1, x.size(2)}), x}, 1));
}

}  // namespace papaya::executor
