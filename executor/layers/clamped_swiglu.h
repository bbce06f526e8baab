#pragma once
// GPT-OSS's experts' gated unit: from the gate and up projections' outputs,
// (clamp(up, -limit, limit) + 1) · c · sigmoid(alpha · c), c = min(gate,
// limit). There is no ATen op for it: every plan runs papaya's autograd
// Function, which saves the two inputs (its slots) and nothing else, and
// under keep stores them as they are and reports them as a native path
// would; backward computes from them alone.
#include "executor/layer.h"

namespace papaya::executor {

class ClampedSwiGlu : public Layer {
 public:
  ClampedSwiGlu(double alpha, double limit);
  torch::Tensor forward(torch::Tensor gate, torch::Tensor up);
  torch::Tensor run(const std::vector<torch::Tensor>& in, const Batch&) override { return forward(in.at(0), in.at(1)); }

  double alpha;  // the sigmoid's slope (GPT-OSS: 1.702)
  double limit;  // the clamps' bound (GPT-OSS: 7)
};

}  // namespace papaya::executor
