#pragma once
#include <torch/torch.h>

#include <vector>

namespace papaya::executor {

// Inputs and targets of one step, on the network's device. Inputs are token
// ids (gpt, bert), images (vit, resnet) or feature vectors (mlp); targets are
// next-token ids (gpt) or class ids. A TorchScript network takes its
// forward's arguments, in order (input is the first; it makes its own
// targets: executor/torchscript/imported_network.h).
struct Batch {
  torch::Tensor input, target;
  std::vector<torch::Tensor> arguments;
};

}  // namespace papaya::executor
