#pragma once
// A network config's shape in a few words, for tables: "12x768, 12 heads,
// 1024 tokens", "bottleneck 3-4-6-3, 224px", "2 hidden layers".
#include <string>

#include "model/catalog/network_config.h"

namespace papaya::cli {

std::string network_shape(const model::NetworkConfig& config);

}  // namespace papaya::cli
