#pragma once
// How the commands that run a network load the one --network names: a
// config (a name, a papaya config file, a HuggingFace config.json) at its
// sequence length, or a TorchScript archive (recognised by content, not by
// extension) with the shapes of its forward's inputs and its loss.
#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "model/catalog/network_config.h"

namespace papaya::cli {

// What the flags beside --network say of the network: a TorchScript
// archive's inputs and loss; a transformer fine-tuned with LoRA.
struct NetworkOptions {
  std::vector<std::string> inputs;  // --input, in the forward's order
  std::string loss;                 // --loss; "": from the output's shape
  int lora_rank = 0;                // --lora; 0: trained whole
  std::optional<double> lora_alpha, lora_dropout;
  std::vector<std::string> lora_targets;
  std::optional<std::string> base_weights;   // --base-weights
  std::vector<std::string> freeze;           // --freeze
  std::optional<double> moe_imbalance;       // --moe-imbalance
  std::optional<std::string> attention;      // --attention: fused | materialized
  bool experts_balanced_by_default = false;  // a command that models: routing forced balanced unless the flag says
};

// --network and --seq-len (add_network_options), then the flags that say
// more of the network: --input (repeatable) and --loss of an archive;
// --lora, --lora-alpha, --lora-dropout, --lora-targets, --base-weights and
// --freeze; --attention fused|materialized; --moe-imbalance (`models`: the
// command builds or checks the performance model, whose experts are then
// balanced by default; a training run's are the router's).
void add_network_choice_options(CLI::App* cmd, std::string& network, std::optional<int>& seq_len, NetworkOptions& options,
                                bool models);

// InputError naming the flag where one does not apply to what `network` is
// (--seq-len, --lora or --freeze to an archive, --input or --loss to a
// config, a LoRA flag without --lora for a config without "lora", a
// --freeze pattern that matches no layer or leaves nothing to train), and as
// model::load_network_config,
// model::with_lora or executor::torchscript::archive_config.
model::NetworkConfig load_network(const std::string& network, std::optional<int> seq_len, const NetworkOptions& options);

}  // namespace papaya::cli
