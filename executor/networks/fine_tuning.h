#pragma once
// Fine-tuning a zoo network: the weights its config leaves untrained frozen.
#include "executor/networks/network.h"

namespace papaya::executor {

// Freezes every layer of `network` but its LoRA adapters under LoRA, and the
// layers its config's "freeze" patterns match (each frozen Linear then
// saves nothing); then marks which layers a backward runs through
// (Layer::differentiated) and which of their inputs need a gradient
// (Layer::set_input_gradients: the first block's attention scores keep no q
// where k comes from a frozen projection), from one forward with autograd
// at the network's smallest batch. Nothing where every weight trains.
void freeze_for_fine_tuning(Network& network);

// Gives the layers whose frozen weights are stored quantized (QLoRA's base)
// one LoadScratch to load them into for each matmul.
void share_load_scratch(Network& network);

}  // namespace papaya::executor
