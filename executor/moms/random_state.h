#pragma once
// The default random generators' state (CPU, and the CUDA device's where
// there is one), so that a recomputation draws the same dropout masks.
#include <ATen/ATen.h>

namespace papaya::executor {

struct RandomState {
  at::Tensor cpu, cuda;
  at::Device device = at::kCPU;

  // The state now, for computations on `device`.
  static RandomState capture(const at::Device& device);
  void restore() const;
};

}  // namespace papaya::executor
