#pragma once
// A mixture of many experts, profiled with a few of them. Where routing is
// forced and every expert but the last gets the same routings
// (model::experts_routed_alike), `limits` profiles each mixture block with
// n of its E experts built (MoeConfig::profiled_experts: the first n - 1
// and the last), and the model fitted to that profile is made the model of
// all E here, in the form the pricing takes (model/alike_experts.h): the
// first expert standing for E - 2 alike ones, the last of their run (the
// profile's expert n - 2, renamed E - 2) and the last (n - 1, renamed
// E - 1) on their own. What one expert more holds is the profile's second
// expert's start less its first's (its saved tensors and the indices the
// block's code keeps for it); the renamed experts and every layer after
// them hold E - n experts more (as block_scaling.h adds blocks), and every
// figure the whole network's weights, gradients and optimizer state. The
// standing expert's times are the mean of the profile's alike experts, E - 2
// times; a recomputed block's forward runs the E - n more.
#include <string>

#include "model/layer_model.h"

namespace papaya::model {

// `profiled`: a model of mixture blocks of `built` experts each (n >= 3),
// made one of `experts` (E > n) each; `static_bytes`: the whole network's
// weights, gradients and optimizer state. Throws InputError, `label` first,
// where a block's experts are not `built` runs of alike layers one after
// another.
LayerModel scale_experts(const LayerModel& profiled, int built, int experts, double static_bytes, const std::string& label);

}  // namespace papaya::model
