#pragma once
// The network zoo: a network built from its config by its family's builder
// (one file each).
#include <memory>

#include "executor/networks/network.h"

namespace papaya::executor {

// With what its config fine-tunes without frozen (fine_tuning.h).
std::shared_ptr<Network> build_network(const model::NetworkConfig& config);

std::shared_ptr<Network> build_transformer(const model::NetworkConfig& config);  // gpt, bert, vit
std::shared_ptr<Network> build_resnet(const model::NetworkConfig& config);
std::shared_ptr<Network> build_mlp(const model::NetworkConfig& config);

// Throws InputError naming why tensor parallelism over `ranks` (with
// `sequence_parallel`, its tokens split too) cannot split `config`'s network
// (Network::split_tensors): before any is built. The heads and tokens as
// model::check_layout divides them, then what papaya's split has not built.
void check_tensor_split(const model::NetworkConfig& config, int ranks, bool sequence_parallel);

}  // namespace papaya::executor
