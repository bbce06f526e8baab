#pragma once
// A shape axis: a text transformer profiled at three fractions of its shape
// (model/catalog/shape_fraction.h: tokens, head and MLP widths, vocabulary
// cut alike, or the widths alone) and modelled whole. Every byte figure and
// tensor size is a quadratic in the fraction, read at 1; a layer's FLOPs
// too where the tokens are kept, and where they are cut a cubic without a
// constant term (tokens times a width by a width; a bias over outputs that
// do not grow, a classifier's, is taken as growing: a few FLOPs too many,
// `parts` times over); times follow the FLOPs
// and the optimizer step the state (model/fit/extrapolation.h). Cutting
// every size at once keeps their proportions: what is largest at the
// network's shape is largest in its profiles too.
#include <string>
#include <vector>

#include "model/catalog/shape_fraction.h"
#include "model/layer_model.h"

namespace papaya::model {

struct ModelAtFraction {
  int k = 0;  // of the network's `parts`
  LayerModel model;
};

// Three models of one network at k/parts of its shape, cut as `cut` says,
// for three distinct k, -> its model at parts/parts. Throws InputError,
// `label` first, naming what differs between them otherwise.
LayerModel at_full_shape(const std::vector<ModelAtFraction>& profiled, int parts, ShapeCut cut, const std::string& label);

}  // namespace papaya::model
