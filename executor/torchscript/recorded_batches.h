#pragma once
// Training data a user recorded for their TorchScript network: a file written
// by torch.save (or torch::pickle_save) holding a list of batches, each a
// tuple (or list) of the forward's arguments in order, optionally followed by
// the loss's target (class labels, or a tensor of the output's shape for mse);
// a bare tensor for a forward of one argument. Read whole and checked against
// the input specs, its batches joined into one stream of rows.
#include <torch/types.h>

#include <string>
#include <vector>

#include "model/catalog/input_spec.h"

namespace papaya::executor::torchscript {

struct RecordedBatches {
  std::vector<at::Tensor> arguments;  // one per spec, every batch's rows joined along dim 0
  at::Tensor target;                  // undefined where the batches hold none
  int64_t rows = 0;
  int64_t batches = 0;
};

// InputError naming `path`, the batch and the argument where the file is not
// one torch.save wrote, holds no batch, or a tensor's dtype, shape or token
// bound differs from its spec (or a target's rows from its batch's).
RecordedBatches load_recorded_batches(const std::string& path, const std::vector<model::InputSpec>& specs);

}  // namespace papaya::executor::torchscript
