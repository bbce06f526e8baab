#pragma once
// The options of every command that takes a network: which one, and at what
// sequence length; and of those that profile it, how much of it.
#include <CLI/CLI.hpp>

#include <optional>
#include <string>

namespace papaya::cli {

// --network/-n (a config name, a papaya config file or a HuggingFace
// config.json) and --seq-len.
void add_network_options(CLI::App* cmd, std::string& network, std::optional<int>& seq_len);

// --profile-blocks K (profiler::ProfileOptions::profile_blocks; 0 stays: all
// of them where they fit, else 2).
void add_profile_blocks_option(CLI::App* cmd, int& blocks);

}  // namespace papaya::cli
