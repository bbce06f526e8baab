#include "cli/options/network_option.h"
#include "cli/options/number_checks.h"

namespace papaya::cli {

void add_network_options(CLI::App* cmd, std::string& network, std::optional<int>& seq_len) {
  cmd->add_option("--network,-n", network,
                  "Network config name (see papaya networks), path to a .json config, or a HuggingFace config.json")
      ->capture_default_str();
  cmd->add_option("--seq-len", seq_len,
                  "Tokens per sample (gpt, bert); default: the config's (a HuggingFace config: its position count, at most "
                  "2048)")
      ->check(positive(seq_len));
}

void add_precision_option(CLI::App* cmd, std::string& precision) {
  cmd->add_option("--precision", precision,
                  "fp32; bf16 (every activation); amp-bf16 or amp-fp16 (torch.autocast's policy: matmuls in the half type, "
                  "norms, softmax and losses in fp32); fp8-tensorwise, fp8-rowwise (torchao's float8 recipes) or "
                  "fp8-delayed (Transformer Engine's delayed scaling): amp-bf16 with the linear layers' products in FP8 "
                  "(emulated on a CPU: its memory is FP8's, its time is not). Weights, gradients and AdamW state stay fp32. "
                  "Default: the "
                  "network's: amp-bf16 for an imported HuggingFace config (fp32 where its torch_dtype is float32), "
                  "fp32 for the others");
}

void add_profile_blocks_option(CLI::App* cmd, int& blocks) {
  cmd->add_option("--profile-blocks", blocks,
                  "Profile the first K of a transformer's blocks (2 or more, every attention window among them) and scale "
                  "the model to all of them; default: all where their weights, gradients and AdamW state take at most half "
                  "of the device's memory, else 2 (Gemma 3: 6, its first global block)")
      ->check(positive(blocks));
}

void add_profile_parts_option(CLI::App* cmd, int& parts) {
  cmd->add_option("--profile-parts", parts,
                  "Profile a text transformer at 1/N, 2/N and 3/N of its shape (its tokens, head and MLP widths and "
                  "vocabulary; heads, blocks and experts as they are) and model it whole from them, N a power of two "
                  "that divides its tokens and head dimensions; 1: at its own shape; default: where a step would be "
                  "slow to profile, the fewest parts that make each profile quick")
      ->check(non_negative(parts))
      ->check(CLI::Validator(
          [](const std::string& value) -> std::string {
            const long n = std::stol(value);  // a whole number: checked above
            if (n == 0 || n == 1 || (n >= 4 && (n & (n - 1)) == 0)) return "";
            return "must be 1 or a power of two of at least 4 (got '" + value + "')";
          },
          "PARTS"));
}

}  // namespace papaya::cli
