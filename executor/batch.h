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

// A target the loss leaves out (nll_loss's ignore_index).
constexpr int64_t ignored_target = -100;

// What a multi-token prediction module `k` places ahead reads
// (model::MultiTokenPredictionConfig): the token ids k positions on, rolled
// (the last k wrap round to the first), and the targets k positions on, the
// last k left out of the loss, as Megatron-LM masks them.
inline torch::Tensor ids_ahead(const torch::Tensor& ids, int64_t k) { return k == 0 ? ids : torch::roll(ids, {-k}, {1}); }
inline torch::Tensor targets_ahead(const torch::Tensor& targets, int64_t k) {
  if (k == 0) return targets;
  torch::Tensor ahead = torch::roll(targets, {-k}, {1});
  ahead.narrow(1, ahead.size(1) - k, k).fill_(ignored_target);
  return ahead;
}

}  // namespace papaya::executor
