// papaya import-hf: a HuggingFace config.json as a papaya network config.
#include <filesystem>
#include <optional>

#include "cli/commands/commands.h"
#include "cli/options/number_checks.h"
#include "cli/report/network_shape.h"
#include "cli/report/report.h"
#include "cli/report/table.h"
#include "model/catalog/hf_config.h"
#include "model/catalog/network_config.h"
#include "model/catalog/parameter_count.h"
#include "model/error.h"
#include "model/json_file.h"
#include "model/units.h"

namespace papaya::cli {
namespace {

struct ImportArgs {
  std::string config;
  std::optional<int> seq_len;
  bool multi_token_prediction = false;
  std::string out;
};

struct Imported {
  model::NetworkConfig config;
  int64_t parameters = 0;
  std::string written;  // --out, or empty
};

void to_json(nlohmann::json& out, const Imported& i) {
  out = {{"network_config", i.config.document}, {"parameters", i.parameters}};
  if (!i.written.empty()) out["written"] = i.written;
}

void print_text(std::ostream& out, const Imported& i) {
  Table table({"network", "family", "shape", "parameters", "trains in", "description"});
  table.add_row({i.config.name, model::to_string(i.config.family), network_shape(i.config),
                 model::format_si(static_cast<double>(i.parameters)), i.config.precision, i.config.description});
  table.print(out);
  if (i.written.empty()) {
    out << "\n" << i.config.document.dump(2) << "\n";
  } else {
    out << "\nwritten to " << i.written << "\n";
  }
}

Imported import_hf(const ImportArgs& args) {
  const nlohmann::json hf = model::read_json_file(args.config, "HuggingFace config");
  if (!model::is_hf_config(hf)) {
    throw InputError(args.config +
                     ": /model_type: missing; not a HuggingFace config.json (types: " + model::supported_hf_model_types() + ")");
  }
  const std::string name = std::filesystem::path(args.config).stem().string();
  Imported i;
  nlohmann::json net = model::network_config_from_hf(hf, name, args.config, args.seq_len);
  if (args.multi_token_prediction) net = model::with_multi_token_prediction(hf, std::move(net), args.config);
  i.config = model::parse_network_config(net, args.config);
  i.parameters = model::parameter_count(i.config);
  if (!args.out.empty()) {
    model::write_json_file(args.out, i.config.document);
    i.written = args.out;
  }
  return i;
}

}  // namespace

void register_import_hf(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "import-hf",
      "Convert a HuggingFace config.json into a papaya network config (every command also takes such a file as --network).");
  auto args = std::make_shared<ImportArgs>();
  cmd->add_option("config", args->config,
                  "A HuggingFace config.json (model_type " + std::string(model::supported_hf_model_types()) + ")")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--seq-len", args->seq_len, "Training sequence length (default: the config's position count, at most 2048)")
      ->check(positive(args->seq_len));
  cmd->add_flag("--mtp", args->multi_token_prediction,
                "Keep the config's multi-token prediction modules (num_nextn_predict_layers: DeepSeek-V3), as DeepSeek and "
                "Megatron-LM pre-train; HuggingFace's Trainer leaves them out, and so does papaya without this flag");
  cmd->add_option("--out", args->out, "Write the papaya network config to FILE");
  const auto output = add_output_options(cmd, "One JSON document: the papaya network config and its parameter count");
  cmd->callback([args, output] { show(import_hf(*args), *output); });
}

}  // namespace papaya::cli
