#pragma once
// What a layout must divide (model/parallel/parallel_layout.h), read off a
// transformer's config: for a layout to be checked before the network is
// built or profiled.
#include "model/catalog/network_config.h"
#include "model/parallel/parallel_layout.h"

namespace papaya::model {

// The blocks, heads, k/v heads, experts, tokens a sample and attention of a
// transformer; InputError where `config` is not one.
TransformerShape transformer_shape(const NetworkConfig& config);

}  // namespace papaya::model
