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

struct ArchiveOptions {
  std::vector<std::string> inputs;  // --input, in the forward's order
  std::string loss;                 // --loss; "": from the output's shape
};

// --input (repeatable) and --loss.
void add_archive_options(CLI::App* cmd, ArchiveOptions& options);

// InputError naming the flag where one does not apply to what `network` is
// (--seq-len to an archive, --input or --loss to a config), and as
// model::load_network_config or executor::torchscript::archive_config.
model::NetworkConfig load_network(const std::string& network, std::optional<int> seq_len, const ArchiveOptions& archive);

}  // namespace papaya::cli
