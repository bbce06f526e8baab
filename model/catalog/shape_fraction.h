#pragma once
// A transformer at a fraction of its shape, to profile one too large or too
// slow to profile whole: at k/parts, each head's dimensions, its MLP's and
// experts' widths, a text network's vocabulary and (as `cut` says) its
// tokens are k/parts of the network's (a ViT's widths alone); its heads, k/v heads, blocks, experts, position
// rows and LoRA rank are the network's. Every byte a training step holds is
// then a quadratic in k (a token's row of a width, attention's squares of
// tokens for each head, weights of a width by a width), so the models at
// three fractions give the network's at k = parts
// (model/fit/shape_scaling.h). A width or vocabulary that `parts` does not
// divide is rounded up to a multiple of it: the network modelled has those
// few rows more (at_shape_fraction(config, parts, parts, cut) is that network).
#include "model/catalog/network_config.h"

namespace papaya::model {

enum class ShapeCut {
  tokens_and_widths,  // the sequence too: the cheapest profiles
  widths,             // the sequence kept whole (a ViT's patches; experts whose shares of fewer tokens are not whole)
};

// The most parts (a power of two) `config` can be cut into: the largest
// that divides its head dimensions, with rotary positions half the
// dimensions rotated (they rotate in pairs), and its tokens where they are
// cut; 1 for a network that is not a gpt or bert (or a ViT cut in its widths).
int shape_parts_limit(const NetworkConfig& config, ShapeCut cut);

// Whether cutting the tokens into `parts` leaves every expert a share of the
// routings that grows with the fraction (always, without experts): a
// balanced share of whole tokens at every fraction; or, routing forced, the
// smallest fraction's routings shared out and repeated (MoeConfig::
// routing_unit, which at_shape_fraction sets), each expert getting
// min_expert_routings or more of them, so that the whole network modelled
// (at_shape_fraction(config, parts, parts, ...)) gives an expert at most one
// routing in that many more or fewer than a balanced share of all at once.
constexpr int64_t min_expert_routings = 8;
bool routes_tokens_in_proportion(const NetworkConfig& config, int parts);

// `config` at k/parts of its shape, 1 <= k <= parts. Throws InputError where
// `parts` is not one shape_parts_limit allows (it must divide that limit).
NetworkConfig at_shape_fraction(const NetworkConfig& config, int k, int parts, ShapeCut cut);

}  // namespace papaya::model
