#pragma once
// The options of every command that takes a network: which one, and at what
// sequence length; and of those that run it, in what precision and how much
// of it to profile.
#include <CLI/CLI.hpp>

#include <optional>
#include <string>

namespace papaya::cli {

// The network a command runs where --network is not given: the main job's.
inline const std::string default_network = "gpt-tiny";

// --network/-n (a config name, a papaya config file or a HuggingFace
// config.json) and --seq-len.
void add_network_options(CLI::App* cmd, std::string& network, std::optional<int>& seq_len);

// --precision: fp32, bf16, amp-bf16 or amp-fp16 (executor/precision.h);
// left empty where not given: the network's (NetworkConfig::precision).
void add_precision_option(CLI::App* cmd, std::string& precision);

// --profile-blocks K (profiler::ProfileOptions::profile_blocks; 0 stays: all
// of them where they fit, else 2).
void add_profile_blocks_option(CLI::App* cmd, int& blocks);

// --profile-parts N (workflow::ProfileAndFitRequest::shape_parts): 0, 1 or a
// power of two from 4.
void add_profile_parts_option(CLI::App* cmd, int& parts);

}  // namespace papaya::cli
