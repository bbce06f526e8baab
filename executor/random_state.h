#pragma once
// The default random generators' state (CPU, and the CUDA device's where
// there is one), so that a recomputation draws the same dropout masks.
#include <ATen/ATen.h>

namespace papaya::executor {

// One generator's state (a byte tensor), under its lock.
at::Tensor generator_state(at::Generator generator);
void set_generator_state(at::Generator generator, const at::Tensor& state);

struct RandomState {
  at::Tensor cpu, cuda;
  at::Device device = at::kCPU;

  // The state now, for computations on `device`.
  static RandomState capture(const at::Device& device);
  void restore() const;
};

}  // namespace papaya::executor
