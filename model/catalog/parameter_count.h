#pragma once
// Parameter counts computed from a config alone (no network is built), for
// listings and for the static memory of networks never instantiated.
#include <cstdint>

#include "model/catalog/network_config.h"

namespace papaya::model {

// Every parameter: the layers' (layer_parameters.h), and those of no layer
// (DeepSeek-V3's selection biases, never trained).
int64_t parameter_count(const NetworkConfig& config);
// The parameters training updates: all of them but a LoRA base's (rank x
// (in + out) per targeted projection and block, as PEFT counts them) and
// those of the layers the config's "freeze" patterns match.
int64_t trainable_parameter_count(const NetworkConfig& config);
// Bytes of the static state training holds: fp32 weights (4 a parameter;
// a LoRA base's projections as its base_weights stores them), the trained
// ones' gradients and AdamW moments (12 more each), and the untrained
// parameters of no layer (DeepSeek-V3's selection biases, 4 bytes each).
double static_state_bytes(const NetworkConfig& config);

}  // namespace papaya::model
