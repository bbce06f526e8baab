#pragma once
// Analytic forward cost of one layer call, from the shapes it saw: floating-
// point operations and bytes moved. They feed the roofline that carries
// measured times to other hardware (DESIGN.md §3).
//
// FLOPs count a multiply-add as 2 and every other arithmetic operation
// (including exp, sqrt, a comparison) as 1; N is the output's elements unless
// said otherwise:
//   linear             2·in·N (+N with a bias), in = the input's last dimension
//   conv2d             2·(C_in·k_h·k_w)·N (+N with a bias)
//   attention_scores   2·d_head·N + N (the scale)
//   attention_context  2·s·N, s = the probabilities' last dimension
//   lm_head            2·d·L + 6·L, L = the logits' elements (log-softmax and gather)
//   cross_entropy      6·L, L = the logits' elements
//   softmax 5·N, gelu 8·N, silu 4·N, relu 1·N, dropout 2·N, mul 1·N, position 1·N
//   layernorm 8·N, rmsnorm 6·N, batchnorm 8·N (normalise, scale, shift, statistics)
//   maxpool k²·N, avgpool N_in, embedding 0, class_token 0
// Bytes moved: the inputs read, the output written, and every saved tensor
// that is neither (a mask, statistics, a copy) written, each once. Weights
// are read once per step whatever the batch: they are the layer's
// parameter_bytes, not counted here. Intermediates inside a layer (the LM
// head's logits) are not counted either: a lower bound.
#include "executor/layer.h"
#include "profiler/layer_calls.h"

namespace papaya::profiler {

struct LayerCost {
  double flops = 0, bytes_moved = 0;
};

// Throws std::logic_error for a layer kind without a formula above.
LayerCost forward_cost(const executor::Layer& layer, const LayerCall& call);

}  // namespace papaya::profiler
