#pragma once
// Analytic forward cost of one layer call, from the shapes it saw: floating-
// point operations and bytes moved. They feed the roofline that carries
// measured times to other hardware (docs/memory-model.md, "The step time and swap overlap").
//
// FLOPs follow each kind's formula in model/layer_kind.cpp (a multiply-add
// counts 2, every other operation 1), e.g. linear 2·in·N (+N with a bias),
// lm_head 2·d·L + 6·L (log-softmax and gather), gelu 8·N, N the output's
// elements, L the logits'.
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

LayerCost forward_cost(const executor::Layer& layer, const LayerCall& call);

}  // namespace papaya::profiler
