#pragma once
// What one GPU of a tensor-, sequence-, context- and expert-parallel group
// holds and computes of a transformer (model/parallel/parallel_layout.h), as the
// model of one process (a LayerModel) that the rest of the model prices
// unchanged: every plan of memory optimizations applies to it as to a
// network trained alone.
//
// Each layer's tensors are the residual stream's ("hidden": a token's row
// of d_model, copied on every tensor-parallel rank, split t ways by tokens
// under sequence parallelism) or a block's inner widths ("width": heads, the
// MLP's width, the vocabulary's logits, split t ways) — read off the layers
// in order as Megatron-LM splits them: a column-parallel projection (q, k,
// v, qkv, fc1, up, the LM head) takes the stream to a width, a row-parallel
// one (proj, o, fc2, down) back. K/v heads fewer than t are copied (each
// rank holds one). Context parallelism splits every per-token tensor c
// ways (attention's scores by their rows: each rank's queries against all
// keys, as ring attention computes them). Expert parallelism holds experts/e
// experts a rank, each receiving e times the tokens (its bytes per rank
// unchanged under balanced routing). Tensors that do not grow with the
// batch are not split.
//
// Bytes and FLOPs of each tensor and layer scale by its share; the fitted
// keep-step figures by the share of what is held at each point (the saved
// tensors held there, weighted by their bytes), and each layer's own
// transient (its output, its scratch) by the layer's share; times per
// sample by the layer's FLOPs share; the static state by each layer's
// parameters' share. For Megatron's GPT block this gives Korthikanti et
// al.'s activation bytes per block exactly: sbh(10 + 24/t + 5as/(ht)) under
// tensor parallelism, sbh(34/t + 5as/(ht)) with sequence parallelism.
#include <vector>

#include "model/layer_model.h"
#include "model/parallel/parallel_layout.h"

namespace papaya::model {

// What the split reads off a layer's path: its role ("blocks.3.attn.proj":
// "proj"); whether it is a row-parallel projection (proj, o, fc2, down),
// whose output tensor-parallel ranks all-reduce; whether it lies in a
// mixture of experts ("....moe...."; in one of its experts: model::in_expert).
std::string layer_role(const std::string& path);
bool row_parallel(const std::string& path);
bool in_mixture_of_experts(const std::string& path);

// Blocks, heads, k/v heads, experts and tokens read off a model's layers.
// Throws InputError, `label` first, where the model has no attention layer.
TransformerShape transformer_shape(const LayerModel& model, const std::string& label);

// The part of a layer one rank holds.
struct LayerShare {
  double parameters = 1;      // of its weights (and their gradients and optimizer state)
  double output = 1;          // of its output
  double compute = 1;         // of its FLOPs
  std::vector<double> slots;  // of each saved tensor (LayerDescription::saved order)
  // Of what its backward makes beyond its start: its largest tensor's share
  // (of its output, FLOPs, saved tensors), the LM head's its logits'
  // (their gradient, vocabulary-parallel, is what it makes).
  double backward_working = 1;
  bool within_width = false;  // its output is a block's inner width (split t ways)
  // Under sequence parallelism a column-parallel projection (and the LM
  // head) gathers the group's tokens of its input for the product, in
  // forward and again in backward, where its input's gradient is over all
  // of them before the reduce-scatter: the share of its input slot it
  // gathers (0: none).
  double gathered_input = 0;
  // Under sequence parallelism a row-parallel projection makes its output
  // over every token, which the reduce-scatter after it shares out, and its
  // backward begins from its output's gradient gathered over every token:
  // the share of its output those hold (0: none).
  double summed_output = 0;
  // The LM head's backward makes its input's gradient over all the rank's
  // tokens (vocabulary-parallel, each rank's part of the group's sum), which
  // backward_working would scale as the logits: the share of its input
  // slot it holds (0: none, or counted with gathered_input).
  double input_gradient = 0;
};

// Each layer's share under `layout` (its tensor, sequence, context and
// expert degrees). Throws InputError naming a layer papaya cannot split (a
// TorchScript module's).
std::vector<LayerShare> layer_shares(const LayerModel& model, const TransformerShape& shape, const ParallelLayout& layout);

// The model of one rank of the group: as above. With every degree 1, `whole`.
LayerModel split_across_ranks(const LayerModel& whole, const TransformerShape& shape, const ParallelLayout& layout);

}  // namespace papaya::model
