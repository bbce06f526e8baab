#pragma once
// The layers of a zoo network that hold weights, named as the executor names
// them, with their parameter counts and whether training updates them (a
// LoRA base and the layers its "freeze" patterns match are frozen), from the
// config alone: what parameter_count.h sums, and what --freeze is checked
// against. No LibTorch.
#include <cstdint>
#include <string>
#include <vector>

#include "model/catalog/network_config.h"

namespace papaya::model {

struct LayerParameters {
  std::string path;  // "blocks.3.attn.q"
  int64_t count = 0;
  bool trained = true;
  // Its weights' bytes as stored: 4 a parameter, but a quantized LoRA base's
  // projection as its format stores it (stored_weight_bytes).
  int64_t stored_bytes = 0;
};

// Whether fine-tuning as `config` says leaves the layer at `path` untrained:
// under LoRA every layer but the adapters (`_lora_` in the path), and those
// its "freeze" patterns match.
bool frozen_layer(const NetworkConfig& config, const std::string& path);

// Forward order; empty for a TorchScript network (its layers are its
// archive's). A tied LM head is counted in the token embedding.
std::vector<LayerParameters> layer_parameters(const NetworkConfig& config);

// The config's "freeze" patterns against its layers: InputError naming
// `where` and the pattern where one matches no layer with weights, or where
// nothing is left to train.
void check_frozen_layers(const NetworkConfig& config, const std::string& where);

// Where the first `profiled` blocks of `config` (a transformer) are what is
// profiled: InputError naming `where` unless every block past them is frozen
// as the last of them is, layer by layer (the model holds them as copies of
// it).
void check_blocks_frozen_alike(const NetworkConfig& config, int profiled, const std::string& where);

}  // namespace papaya::model
