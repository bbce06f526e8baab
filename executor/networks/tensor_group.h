#pragma once
// The ranks of a tensor-parallel group as the layers split across them see
// it (Megatron-LM's): each holds a share of every projection's heads or
// columns and of the vocabulary, and the group's sums join the shares. With
// sequence parallelism the tensors between the projections (the residual
// stream, the norms) hold each rank's share of the tokens, dimension 1.
// executor/distributed/tensor_parallel.h makes one over c10d.
#include <torch/torch.h>

namespace papaya::executor {

class TensorGroup {
 public:
  virtual ~TensorGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Whether the tokens between the projections are split (sequence parallelism).
  virtual bool splits_sequence() const = 0;
  // Megatron's f, before a column-parallel projection: x as it is, its
  // gradient summed over the group; with the tokens split, the ranks'
  // shares gathered (all-gather), the gradient summed and this rank's share
  // of it kept (reduce-scatter).
  virtual torch::Tensor enter(const torch::Tensor& x) = 0;
  // Megatron's g, after a row-parallel projection: x summed over the group,
  // its gradient as it is; with the tokens split, this rank's share of the
  // sum (reduce-scatter), the gradient gathered (all-gather).
  virtual torch::Tensor sum(const torch::Tensor& x) = 0;
  // The elementwise sum and maximum over the group, outside autograd.
  virtual torch::Tensor total(const torch::Tensor& x) = 0;
  virtual torch::Tensor max(const torch::Tensor& x) = 0;
  // Outside autograd: every rank's share of the tokens gathered (all-gather),
  // and this rank's share of the group's sum of a tensor of all of them
  // (reduce-scatter), summed in place: a fresh tensor the caller gives up.
  virtual torch::Tensor gathered(const torch::Tensor& share) = 0;
  virtual torch::Tensor scattered_sum(torch::Tensor whole) = 0;
};

}  // namespace papaya::executor
