#pragma once
// The ranks of a tensor-parallel group as the layers split across them see
// it (Megatron-LM's): each holds a share of every projection's heads or
// columns and of the vocabulary, and the group's sums join the shares.
// executor/distributed/tensor_parallel.h makes one over c10d.
#include <torch/torch.h>

namespace papaya::executor {

class TensorGroup {
 public:
  virtual ~TensorGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Megatron's f, before a column-parallel projection: x as it is, its
  // gradient summed over the group.
  virtual torch::Tensor enter(const torch::Tensor& x) = 0;
  // Megatron's g, after a row-parallel projection: x summed over the group,
  // its gradient as it is.
  virtual torch::Tensor sum(const torch::Tensor& x) = 0;
  // The elementwise maximum over the group, outside autograd.
  virtual torch::Tensor max(const torch::Tensor& x) = 0;
};

}  // namespace papaya::executor
