#pragma once
// A sequence-length axis: a text network profiled at three short sequence
// lengths, modelled at a longer one (`papaya fit P1 P2 P3 --seq-len N`). Every
// byte figure of the model and every size in its layers' descriptions is a
// polynomial of degree at most 2 in the tokens (most tensors hold a row per
// token; attention's scores and probabilities a token by token square; the
// causal mask too), so the three profiles' models give each figure's
// quadratic exactly, and it is read at N; times follow the FLOPs
// (model/fit/extrapolation.h).
#include <string>
#include <vector>

#include "model/layer_model.h"

namespace papaya::model {

struct ModelAtLength {
  int seq_len = 0;
  LayerModel model;
};

// Three models of one network (same layers, precision, batches) at three
// distinct sequence lengths -> its model at `seq_len`. Throws InputError,
// `label` first, naming what differs between them otherwise.
LayerModel at_sequence_length(const std::vector<ModelAtLength>& profiled, int seq_len, const std::string& label);

}  // namespace papaya::model
