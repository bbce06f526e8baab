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
  // Its rows within the batch it was sliced from (a data-parallel rank's
  // share): [first, first + rows) of `of`; of == 0: it is a whole batch. A
  // target the network draws itself is drawn for the whole batch and sliced,
  // so that the ranks train as one process would.
  struct Rows {
    int64_t first = 0, of = 0;
  } rows;
};

}  // namespace papaya::executor
