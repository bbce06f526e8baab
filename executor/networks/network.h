#pragma once
// A network of the zoo, built from a config: its layers (forward order, with
// path names) and segments, and its loss on a batch.
#include <torch/torch.h>

#include <string>
#include <vector>

#include "executor/batch.h"
#include "executor/layer.h"
#include "executor/networks/tensor_group.h"
#include "executor/precision.h"
#include "executor/segment.h"
#include "model/catalog/network_config.h"

namespace papaya::executor {

class Network : public torch::nn::Module {
 public:
  explicit Network(model::NetworkConfig config) : config_(std::move(config)) {}

  // Mean loss of the batch, differentiable.
  virtual torch::Tensor loss(const Batch& batch) = 0;

  // A network whose forward is a chain of blocks (a transformer's) runs in
  // parts, as pipeline stages run it: loss(batch) is
  // after_blocks(run_block(n - 1, ... run_block(0, before_blocks(batch))), batch).
  // block_count() 0: it is no such chain, and the parts throw.
  virtual int block_count() const { return 0; }
  virtual torch::Tensor before_blocks(const Batch& batch);
  virtual torch::Tensor run_block(int block, torch::Tensor x);
  virtual torch::Tensor after_blocks(torch::Tensor x, const Batch& batch);

  // Keeps `group`'s rank's share of every layer tensor parallelism splits
  // (Megatron-LM's column- and row-parallel projections, vocab-parallel
  // embedding and loss), for a network as a whole built on every rank alike.
  // Throws InputError for a network it is not built for, or whose heads,
  // widths or vocabulary the group does not divide.
  virtual void split_tensors(const std::shared_ptr<TensorGroup>& group);
  // After split_tensors: the weights every rank of the group holds whole
  // (the norms').
  const std::vector<torch::Tensor>& replicated_weights() const { return replicated_weights_; }

  const model::NetworkConfig& config() const { return config_; }
  const std::vector<Layer*>& layers() const { return layers_; }
  const std::vector<Segment*>& segments() const { return segments_; }
  Layer* find_layer(const std::string& path) const;      // nullptr if none
  Segment* find_segment(const std::string& path) const;  // nullptr if none

  // Sets every layer's compute type (parameters stay fp32) and, under an
  // FP8 recipe, the linear layers it converts. Throws InputError for an FP8
  // recipe over a projection that gathers a split sequence.
  void set_precision(const Precision& precision);
  // The type of the activations between layers: the network's input and
  // the residual stream (fp32 under autocast).
  torch::ScalarType compute_dtype() const { return compute_dtype_; }
  const Precision& precision() const { return precision_; }

  // Its weights, stored ones (StoredWeight) among them.
  int64_t parameter_count() const;
  // Bytes of the weights layers store other than as parameters.
  int64_t stored_weight_bytes() const;
  // Bytes an FP8 recipe keeps between steps beside the parameters (the
  // delayed recipe's FP8 weights and amax histories).
  int64_t fp8_state_bytes() const;

  // Stops recomputing the segments whose first layer saves no input (a
  // fine-tuned network's frozen front: nothing a recomputation could start
  // from is kept); their layers belong to no segment.
  void drop_segments_without_input();
  // The parameters training updates (all but a fine-tuned network's frozen
  // ones), in registration order.
  std::vector<torch::Tensor> trainable_parameters() const;
  int64_t trainable_parameter_count() const;

  // What the step's loss is multiplied by before backward (a fp16 loss
  // scale; 1 otherwise): a loss whose gradient a layer adds in backward
  // alone, the experts' balancing loss, is multiplied alike.
  double loss_scale() const { return loss_scale_; }
  void set_loss_scale(double scale) { loss_scale_ = scale; }

 protected:
  // Names every layer and segment by its module path; the derived
  // constructor calls it last, after registering modules in forward order.
  void index_paths();
  // Puts each layer in the innermost segment whose path prefixes its own
  // (index_paths does; a network whose paths are not its module names, after
  // naming them).
  void assign_segments();
  void set_replicated_weights(std::vector<torch::Tensor> weights) { replicated_weights_ = std::move(weights); }

 private:
  model::NetworkConfig config_;
  std::vector<Layer*> layers_;
  std::vector<Segment*> segments_;
  std::vector<torch::Tensor> replicated_weights_;
  Precision precision_;
  torch::ScalarType compute_dtype_ = torch::kFloat;
  double loss_scale_ = 1;
};

}  // namespace papaya::executor
