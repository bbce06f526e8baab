#pragma once
#include <torch/torch.h>

namespace papaya::executor {

// Inputs and targets of one step, on the network's device. Inputs are token
// ids (gpt, bert), images (vit, resnet) or feature vectors (mlp); targets are
// next-token ids (gpt) or class ids.
struct Batch {
  torch::Tensor input, target;
};

}  // namespace papaya::executor
