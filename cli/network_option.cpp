#include "cli/network_option.h"

namespace papaya::cli {

void add_network_options(CLI::App* cmd, std::string& network, std::optional<int>& seq_len) {
  cmd->add_option("--network,-n", network,
                  "Network config name (see papaya networks), path to a .json config, or a HuggingFace config.json")
      ->capture_default_str();
  cmd->add_option("--seq-len", seq_len,
                  "Tokens per sample (gpt, bert); default: the config's (a HuggingFace config: its position count, at most "
                  "2048)")
      ->check(CLI::PositiveNumber);
}

}  // namespace papaya::cli
