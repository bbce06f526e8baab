#include "cli/network_choice.h"

#include "executor/torchscript/archive.h"
#include "executor/torchscript/imported_network.h"
#include "model/error.h"

namespace papaya::cli {

namespace ts = executor::torchscript;

void add_archive_options(CLI::App* cmd, ArchiveOptions& options) {
  cmd->add_option("--input", options.inputs,
                  "A TorchScript network's forward argument, once per argument in order: dtype[shape] with B for the batch, "
                  "e.g. 'float32[B,3,224,224]', 'int64[B,128]<50257' for ids below a bound; default: the archive's "
                  "papaya.json");
  cmd->add_option("--loss", options.loss,
                  "How a TorchScript network's output becomes a loss: output (it is one), cross-entropy ([B,C] logits, or "
                  "[B,T,V] against the next token), mse; default: from the output's shape");
}

model::NetworkConfig load_network(const std::string& network, std::optional<int> seq_len, const ArchiveOptions& archive) {
  if (!ts::looks_like_archive(network)) {
    if (!archive.inputs.empty() || !archive.loss.empty()) {
      throw InputError(std::string(archive.inputs.empty() ? "--loss" : "--input") + " applies to a TorchScript archive; " +
                       network + " is a network config");
    }
    return model::load_network_config(network, seq_len);
  }
  if (seq_len) throw InputError("--seq-len: " + network + " is a TorchScript archive: its inputs' shapes are given by --input");
  std::optional<ts::LossKind> loss;
  if (!archive.loss.empty()) loss = ts::parse_loss_kind(archive.loss, "--loss");
  return ts::archive_config(network, archive.inputs, "--input", loss);
}

}  // namespace papaya::cli
