// papaya networks: the shipped network configs.
#include "cli/commands/commands.h"
#include "cli/report/network_shape.h"
#include "cli/report/report.h"
#include "cli/report/table.h"
#include "model/catalog/network_config.h"
#include "model/catalog/parameter_count.h"
#include "model/units.h"

namespace papaya::cli {
namespace {

struct ShippedNetwork {
  std::string name;
  model::NetworkConfig config;
  int64_t parameters = 0;
};

void to_json(nlohmann::json& out, const ShippedNetwork& n) {
  out = {{"name", n.name},
         {"family", model::to_string(n.config.family)},
         {"parameters", n.parameters},
         {"sequence_length", n.config.sequence_length()},
         {"description", n.config.description},
         {"source", n.config.source}};
}

void print_text(std::ostream& out, const std::vector<ShippedNetwork>& networks) {
  Table table({"network", "family", "shape", "parameters", "description"});
  for (const auto& n : networks) {
    table.add_row({n.name, model::to_string(n.config.family), network_shape(n.config),
                   model::format_si(static_cast<double>(n.parameters)), n.config.description});
  }
  table.print(out);
}

std::vector<ShippedNetwork> shipped_networks() {
  std::vector<ShippedNetwork> out;
  for (const auto& name : model::shipped_network_names()) {
    model::NetworkConfig config = model::load_network_config(name);
    const int64_t parameters = model::parameter_count(config);
    out.push_back({name, std::move(config), parameters});
  }
  return out;
}

}  // namespace

void register_networks(CLI::App& app) {
  auto* cmd = app.add_subcommand("networks", "List the shipped network configs (configs/networks).");
  const auto output = add_output_options(cmd);
  cmd->callback([output] { show(shipped_networks(), *output); });
}

}  // namespace papaya::cli
