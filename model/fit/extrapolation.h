#pragma once
// What sequence and shape scaling share: models of one network (the same
// layers, precision and batches) at three values of one size x, whose every
// byte figure and every tensor size in its layers' descriptions is a
// polynomial of degree at most 2 in x, carried to another x. The three
// models give each such figure's quadratic exactly, read there; a layer's
// FLOPs grow as `flops` says. Times follow the work: each layer's cost per
// sample is the largest model's times its FLOPs there over its FLOPs in that
// model (its segment's recompute the same, the rest of the step with the
// whole network's FLOPs); the optimizer step, a pass over weights, gradients
// and state, with the static bytes (on a catalog GPU, where a small step is
// launch-bound, by the bytes added at the GPU's bandwidth); fixed costs do
// not grow. Rates (codecs, host links, roofline efficiencies) are the
// largest model's.
#include <string>

#include "model/layer_model.h"

namespace papaya::model {

enum class FlopsGrowth {
  quadratic,        // in the tokens (a row per token, attention's token-by-token products), or in the widths alone
  cubic_from_zero,  // in a shape scaled whole: tokens times width times width, none at zero
};

struct ModelAtSize {
  double size = 0;
  LayerModel model;
};

// `models`: three, sizes distinct and ascending (a logic_error otherwise).
// Throws InputError, `label` first, naming what differs between them besides
// sizes.
LayerModel extrapolated(const ModelAtSize (&models)[3], double size, FlopsGrowth flops, const std::string& label);

}  // namespace papaya::model
