#pragma once
// The source that builds a network config: the zoo (network_source.h), or a
// TorchScript archive (torchscript/imported_network.h).
#include <memory>

#include "executor/networks/network_source.h"
#include "model/catalog/network_config.h"

namespace papaya::executor {

std::unique_ptr<NetworkSource> source_for(const model::NetworkConfig& config);

}  // namespace papaya::executor
