#pragma once
// The options of every command that takes a network: which one, and at what
// sequence length.
#include <CLI/CLI.hpp>

#include <optional>
#include <string>

namespace papaya::cli {

// --network/-n (a config name, a papaya config file or a HuggingFace
// config.json) and --seq-len.
void add_network_options(CLI::App* cmd, std::string& network, std::optional<int>& seq_len);

}  // namespace papaya::cli
