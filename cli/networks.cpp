// papaya networks: the shipped network configs.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/table.h"
#include "model/network_config.h"
#include "model/parameter_count.h"
#include "model/units.h"

namespace papaya::cli {
namespace {

std::string shape(const model::NetworkConfig& c) {
  switch (c.family) {
    case model::Family::resnet: {
      std::string stages;
      for (int s : c.resnet().stages) stages += (stages.empty() ? "" : "-") + std::to_string(s);
      return c.resnet().block + " " + stages + ", " + std::to_string(c.resnet().image_size) + "px";
    }
    case model::Family::mlp: return std::to_string(c.mlp().hidden.size()) + " hidden layers";
    default: {
      const auto& t = c.transformer();
      return std::to_string(t.layers) + "x" + std::to_string(t.d_model) + ", " + std::to_string(t.heads) + " heads, " +
             std::to_string(c.sequence_length()) + " tokens";
    }
  }
}

}  // namespace

void register_networks(CLI::App& app) {
  auto* cmd = app.add_subcommand("networks", "List the shipped network configs (configs/networks).");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "One JSON document instead of a table");
  cmd->callback([json] {
    nlohmann::json out = nlohmann::json::array();
    Table table({"network", "family", "shape", "parameters", "description"});
    for (const auto& name : model::shipped_network_names()) {
      const auto config = model::load_network_config(name);
      const int64_t params = model::parameter_count(config);
      out.push_back({{"name", name},
                     {"family", model::to_string(config.family)},
                     {"parameters", params},
                     {"sequence_length", config.sequence_length()},
                     {"description", config.description},
                     {"source", config.source}});
      table.add_row({name, model::to_string(config.family), shape(config), model::format_si(static_cast<double>(params)),
                     config.description});
    }
    if (*json) {
      std::cout << out.dump(2) << "\n";
    } else {
      table.print(std::cout);
    }
  });
}

}  // namespace papaya::cli
