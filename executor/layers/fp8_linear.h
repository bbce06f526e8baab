#pragma once
// A linear layer's three products in FP8 (forward y = x W^T; backward the
// input's gradient g W and the weight's g^T x), emulated where LibTorch has
// no FP8 product: each operand is scaled and cast to 1-byte codes as the
// recipe casts it (storage/fp8_codes.h), the codes are read back in bf16 and
// multiplied, and the product is unscaled. What the layer keeps is what the
// recipe keeps (docs/memory-model.md):
//   tensorwise, rowwise (torchao): its bf16 input (slot "input") and its
//     fp32 weight, both cast again in backward;
//   delayed (Transformer Engine): its input's E4M3 codes (slot "input", one
//     byte an element, kept as they are) and, between steps, the FP8 weight
//     with its transpose, the amax history and the scales
//     (model::fp8_state_bytes), scales taken from the history's maximum.
// Its time on a CPU says nothing of FP8 speed.
#include <torch/torch.h>

#include <memory>

#include "model/fp8_recipe.h"

namespace papaya::executor {

class Layer;

// Transformer Engine's per-layer state (delayed scaling): registered as the
// layer's buffers, so that they count, move and checkpoint with it (a
// resumed run goes on bit for bit).
struct Fp8DelayedState {
  torch::Tensor weight_codes, weight_codes_t;  // uint8, (out, in) and (in, out)
  torch::Tensor amax_history;                  // fp32, (history, 5): one row a step, the columns as `scales`
  torch::Tensor scales;                        // fp32, (5): input, weight, output, output's gradient, input's gradient
  torch::Tensor steps;                         // int64, (): steps begun; the history's row is steps - 1 modulo its length
  double weight_scale = 1;                     // the scale weight_codes were cast with
  // bool, (): a step begins at the first forward after the layer's backward
  // (or after a forward where it has none): a segment recomputed in backward
  // runs its forward again before the layer's backward, in the same step,
  // with the same scales.
  torch::Tensor step_done;
};

struct Fp8Linear {
  model::Fp8Recipe recipe = model::Fp8Recipe::none;
  std::shared_ptr<Fp8DelayedState> delayed;  // the delayed recipe's
};

// The state the delayed recipe holds for a (out x in) weight on its device.
std::shared_ptr<Fp8DelayedState> make_fp8_delayed_state(const torch::Tensor& weight);

// What the layer saves of its input x (in its compute dtype) for backward:
// x itself, or (delayed) its codes. The first forward of a step first takes
// the delayed recipe's scales from its history.
struct Fp8Input {
  torch::Tensor saved;
  double scale = 1;  // delayed: the scale its codes were cast with
};
Fp8Input fp8_input(const Fp8Linear& fp8, const torch::Tensor& x, bool recomputed);

// The layer's output: its products in FP8, its slot 0 (if it has one)
// storing `in.saved` as its plan says, or kept as it is where `recomputed`
// (a layer's native path, run again in backward: no amax is recorded).
torch::Tensor fp8_linear(const Layer& layer, const Fp8Linear& fp8, const Fp8Input& in, const torch::Tensor& x,
                         const torch::Tensor& weight, const torch::Tensor& bias, bool recomputed);

}  // namespace papaya::executor
