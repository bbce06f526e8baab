#pragma once
// Parameter counts computed from a config alone (no network is built), for
// listings and for the static memory of networks never instantiated.
#include <cstdint>

#include "model/catalog/network_config.h"

namespace papaya::model {

int64_t parameter_count(const NetworkConfig& config);

}  // namespace papaya::model
