#pragma once
// One call of every layer in a forward pass: what the layer was given, what it
// saved for backward and what it returned. The profiler derives shapes,
// per-sample sizes and analytic costs from two such passes.
#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "executor/networks/network.h"

namespace papaya::profiler {

struct LayerCall {
  std::vector<torch::Tensor> inputs;                         // the tensors the layer reports as its inputs
  std::vector<std::pair<std::string, torch::Tensor>> saved;  // slot name, tensor
  torch::Tensor output;
  std::vector<std::string> data_slots;           // saved slots that share a storage with the batch's own tensors
  std::vector<std::string> after_forward_slots;  // saved after the layer's forward returned (the code after it)
};

// One forward of the network on a synthetic batch of `batch` samples, without
// autograd and in eval mode (so that neither batch-norm statistics nor the
// random state move), as executor::probe_layout runs it. Indexed like
// network.layers(); throws std::logic_error if a layer is not called once or
// leaves a declared slot unsaved.
std::vector<LayerCall> record_calls(executor::Network& network, int64_t batch);

}  // namespace papaya::profiler
