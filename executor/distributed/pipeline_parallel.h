#pragma once
// Pipeline parallelism over Collectives: rank s of the job is stage s of as
// many, holding the layers of its blocks as the model splits them
// (model/parallel/pipeline_stages.h: the layers before the blocks on the
// first stage, those after on the last) and nothing of the others' weights,
// gradients or optimizer state. A step runs the global batch in micro-batches
// on Megatron-LM's 1F1B schedule: stage s runs p - s - 1 forwards ahead, then
// one forward and one backward in turn, then the backwards left, so it holds
// at most p - s micro-batches' activations; each hands its output to the next
// stage and the gradient of its input to the one before; its output's values
// go once sent, its graph kept for backward. The gradients add up
// over the micro-batches, each loss divided by their number: the step one
// process takes at the global batch.
#include <torch/torch.h>

#include <functional>
#include <vector>

#include "executor/distributed/collectives.h"
#include "executor/networks/network.h"
#include "model/parallel/pipeline_stages.h"

namespace papaya::executor {

// Stage `stage` of `stages` of `network`. Throws InputError for a network
// that is no chain of blocks, fewer blocks than stages, or an LM head tied
// to the embedding (its weight would be on two stages).
model::StageSpan stage_span(const Network& network, int stage, int stages);

// The trained parameters of the stage's layers: what its optimizer steps.
std::vector<torch::Tensor> stage_parameters(const Network& network, int stage, int stages);

class PipelineParallel {
 public:
  // This rank's stage: the other stages' weights let go, their gradients
  // too. Throws InputError as stage_span does; `micro_batches` are at
  // least the stages (a checked layout's).
  PipelineParallel(Collectives& collectives, Network& network, int micro_batches);

  // One step's forward and backward of `batch`, the global batch (every
  // stage given the same; its rows a multiple of the micro-batches), on the
  // 1F1B schedule. Returns the global batch's mean loss, on every stage.
  double forward_backward(const Batch& batch);
  // Runs `then` after each micro-batch's backward (a ZeRO-2/3 rank reduces
  // the micro-batch's gradients there).
  void after_each_backward(std::function<void()> then) { after_backward_ = std::move(then); }

 private:
  struct InFlight {
    torch::Tensor input;  // the received activation (a leaf), undefined on the first stage
    torch::Tensor loss;   // on the last stage
    // Before the last: the output's graph and shape. Its values go once
    // sent (Megatron-LM's deallocate_output_tensor): backward needs its
    // graph and its gradient, not them.
    torch::autograd::Edge output_graph;
    torch::Tensor output_like;  // an empty tensor of the output's dtype and device
    std::vector<int64_t> output_shape;
  };
  InFlight forward(const Batch& micro_batch, int index);
  // Returns the micro-batch's loss on the last stage, 0 elsewhere.
  double backward(InFlight& in_flight, int index);
  // Tags: micro-batch i's activation shape 3i, activation 3i + 1, gradient 3i + 2.
  void send(const torch::Tensor& tensor, int to, int tag);
  // Waits for the sends of these tags and lets go of what they read.
  void finish_sends(int first_tag, int end_tag);
  torch::Tensor receive_activation(int index);

  struct Send {
    int tag;
    torch::Tensor tensor;  // what it reads, kept until it is done
    Collectives::Pending pending;
  };
  Collectives& collectives_;
  Network& network_;
  int micro_batches_;
  model::StageSpan span_;
  std::vector<Send> sends_;
  std::function<void()> after_backward_;
};

}  // namespace papaya::executor
