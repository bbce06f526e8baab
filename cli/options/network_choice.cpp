#include "cli/options/network_choice.h"

#include <algorithm>
#include <sstream>

#include "cli/options/network_option.h"
#include "cli/options/number_checks.h"
#include "executor/torchscript/archive.h"
#include "executor/torchscript/imported_network.h"
#include "model/catalog/layer_parameters.h"
#include "model/catalog/layer_pattern.h"
#include "model/error.h"

namespace papaya::cli {

namespace ts = executor::torchscript;

namespace {

void add_archive_options(CLI::App* cmd, NetworkOptions& options) {
  cmd->add_option("--input", options.inputs,
                  "A TorchScript network's forward argument, once per argument in order: dtype[shape] with B for the batch, "
                  "e.g. 'float32[B,3,224,224]', 'int64[B,128]<50257' for ids below a bound; default: the archive's "
                  "papaya.json");
  cmd->add_option("--loss", options.loss,
                  "How a TorchScript network's output becomes a loss: output (it is one), cross-entropy ([B,C] logits, or "
                  "[B,T,V] against the next token), mse; default: from the output's shape");
}

void add_fine_tuning_options(CLI::App* cmd, NetworkOptions& options) {
  cmd->add_option("--lora", options.lora_rank,
                  "Fine-tune with LoRA adapters of this rank beside the --lora-targets projections, every other weight "
                  "frozen (as PEFT does); 0: train every weight")
      ->check(non_negative(options.lora_rank));
  cmd->add_option("--lora-alpha", options.lora_alpha, "With --lora: the adapters' output is scaled by alpha / rank [default: 8]")
      ->check(positive(options.lora_alpha));
  cmd->add_option("--lora-dropout", options.lora_dropout, "With --lora: dropout on the adapters' input, below 1 [default: 0]")
      ->check(within(options.lora_dropout, 0.0, 1.0));
  cmd->add_option("--lora-targets", options.lora_targets,
                  "With --lora: the projections adapted, comma-separated roles: q, k, v (or qkv where one projection makes "
                  "them), o, gate, up, down (SwiGLU) or fc1, fc2 [default: q,v, or qkv]")
      ->delimiter(',');
  cmd->add_option("--base-weights", options.base_weights,
                  "With --lora: how the frozen projections' weights are stored: fp32, bf16, int8 (a byte a weight and "
                  "an absmax a row, LLM.int8's) or nf4 (QLoRA's 4-bit NormalFloat, 4.127 bits a weight) [default: fp32]");
  cmd->add_option("--freeze", options.freeze,
                  "Fine-tune with the layers these comma-separated patterns name frozen (no gradient, no optimizer "
                  "state): '*' any characters, '?' one, '[a-b]' a number from a to b, e.g. 'tok_emb,blocks.[0-5].*'")
      ->delimiter(',');
}

void add_attention_option(CLI::App* cmd, NetworkOptions& options) {
  cmd->add_option("--attention", options.attention,
                  "A transformer's attention: fused (one layer keeping q, k, v, its output and a log-sum-exp a row, as "
                  "FlashAttention and PyTorch's scaled_dot_product_attention train) or materialized (scores, softmax and "
                  "context keeping the token-by-token probabilities); default: the config's, else fused")
      ->check(CLI::IsMember({"fused", "materialized"}));
}

void add_expert_routing_option(CLI::App* cmd, NetworkOptions& options, bool models) {
  options.experts_balanced_by_default = models;
  cmd->add_option("--moe-imbalance", options.moe_imbalance,
                  std::string("A mixture of experts' routing forced: the busiest expert of each block gets this share of its "
                              "routings, from 1/experts (balanced) to 1/experts_per_token, the others the rest alike; ") +
                      (models ? "default: balanced (a trained router's aim)" : "default: the router's choice"))
      ->check(within(options.moe_imbalance, 0.0, 1.0));
}

// The config fine-tuned as the LoRA flags say: with --lora, or changing
// the "lora" of a config that has one; as it is without either.
model::NetworkConfig with_lora_options(const model::NetworkConfig& config, const NetworkOptions& options) {
  const bool flags = options.lora_alpha || options.lora_dropout || !options.lora_targets.empty() || options.base_weights;
  const bool configured = std::holds_alternative<model::TransformerConfig>(config.body) && config.transformer().lora;
  if (options.lora_rank == 0 && !(flags && configured)) {
    if (flags) {
      throw InputError(std::string(options.lora_alpha     ? "--lora-alpha"
                                   : options.lora_dropout ? "--lora-dropout"
                                   : options.base_weights ? "--base-weights"
                                                          : "--lora-targets") +
                       " applies with --lora RANK (or a config with \"lora\")");
    }
    return config;
  }
  model::LoraConfig lora = configured ? *config.transformer().lora : model::LoraConfig{};
  if (options.lora_rank > 0) lora.rank = options.lora_rank;
  lora.alpha = options.lora_alpha.value_or(lora.alpha);
  lora.dropout = options.lora_dropout.value_or(lora.dropout);
  if (!options.lora_targets.empty() || !configured) lora.targets = options.lora_targets;
  if (std::holds_alternative<model::TransformerConfig>(config.body)) {
    const std::vector<std::string> roles = model::projection_roles(config.transformer());
    for (const std::string& target : options.lora_targets) {
      if (std::find(roles.begin(), roles.end(), target) == roles.end()) {
        std::string known;
        for (const auto& role : roles) known += (known.empty() ? "" : ", ") + role;
        throw InputError("--lora-targets: '" + target + "' names no projection of " + config.name +
                         " (its projections: " + known + ")");
      }
    }
  }
  if (options.base_weights) lora.base_weights = model::parse_weight_format(*options.base_weights, "--base-weights");
  return model::with_lora(config, lora);
}

// The routing forced as --moe-imbalance says, its range checked in the
// flag's words.
model::NetworkConfig with_expert_routing_flag(const model::NetworkConfig& config, double share) {
  const model::MoeConfig& moe = *config.mixture();
  if (!model::busiest_share_fits(moe, share)) {
    std::ostringstream given;
    given << share;
    throw InputError("--moe-imbalance: " + given.str() + " is not a busiest expert's share of " + config.name +
                     "'s routings: a share " + model::busiest_share_range(moe));
  }
  return model::with_expert_routing(config, share);
}

}  // namespace

void add_network_choice_options(CLI::App* cmd, std::string& network, std::optional<int>& seq_len, NetworkOptions& options,
                                bool models) {
  add_network_options(cmd, network, seq_len);
  add_archive_options(cmd, options);
  add_fine_tuning_options(cmd, options);
  add_attention_option(cmd, options);
  add_expert_routing_option(cmd, options, models);
}

model::NetworkConfig load_network(const std::string& network, std::optional<int> seq_len, const NetworkOptions& options) {
  if (!ts::looks_like_archive(network)) {
    if (!options.inputs.empty() || !options.loss.empty()) {
      throw InputError(std::string(options.inputs.empty() ? "--loss" : "--input") + " applies to a TorchScript archive; " +
                       network + " is a network config");
    }
    model::NetworkConfig config = with_lora_options(model::load_network_config(network, seq_len), options);
    if (options.attention) {
      if (!std::holds_alternative<model::TransformerConfig>(config.body)) {
        throw InputError("--attention: " + config.name + " is a " + model::to_string(config.family) +
                         " network: it has no attention");
      }
      config = model::with_attention(config, *options.attention);
    }
    if (!options.freeze.empty()) {
      for (size_t i = 0; i < options.freeze.size(); ++i) model::check_layer_pattern(options.freeze[i], "--freeze");
      config = model::with_freeze(config, options.freeze);
    }
    model::check_frozen_layers(config, options.freeze.empty() ? config.name + ": freeze" : "--freeze");
    const model::MoeConfig* mixture = config.mixture();
    if (options.moe_imbalance && !mixture) throw InputError("--moe-imbalance: " + config.name + " has no mixture of experts");
    if (options.moe_imbalance) {
      config = with_expert_routing_flag(config, *options.moe_imbalance);
    } else if (mixture && options.experts_balanced_by_default && !mixture->busiest_share) {
      config = model::with_expert_routing(config, 1.0 / mixture->experts);
    }
    return config;
  }
  if (seq_len) throw InputError("--seq-len: " + network + " is a TorchScript archive: its inputs' shapes are given by --input");
  if (options.attention) {
    throw InputError("--attention: " + network + " is a TorchScript archive: its attention is what its graph computes");
  }
  if (options.lora_rank > 0)
    throw InputError("--lora: " + network + " is a TorchScript archive: LoRA adapts papaya's transformers");
  if (!options.freeze.empty()) {
    throw InputError("--freeze: " + network +
                     " is a TorchScript archive: its frozen weights are those saved without requires_grad");
  }
  std::optional<ts::LossKind> loss;
  if (!options.loss.empty()) loss = ts::parse_loss_kind(options.loss, "--loss");
  return ts::archive_config(network, options.inputs, "--input", loss);
}

}  // namespace papaya::cli
