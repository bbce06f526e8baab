#pragma once
// Builders of each network family (one file each).
#include "executor/networks/network.h"

namespace papaya::executor {

std::shared_ptr<Network> build_transformer(const model::NetworkConfig& config);  // gpt, bert, vit
std::shared_ptr<Network> build_resnet(const model::NetworkConfig& config);
std::shared_ptr<Network> build_mlp(const model::NetworkConfig& config);

}  // namespace papaya::executor
