// papaya limits MODEL --hardware A,B,C: the largest batch of every
// whole-network plan on each catalog entry, under a memory budget.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/table.h"
#include "model/error.h"
#include "model/predict.h"
#include "model/units.h"

namespace papaya::cli {
namespace {

struct LimitsArgs {
  std::string model;
  std::string hardware;
  std::string budget;
  bool json = false;
};

std::vector<std::string> split_commas(const std::string& text) {
  const std::vector<std::string> parts = model::split(text, ',');
  for (const auto& part : parts) {
    if (part.empty()) throw InputError("--hardware: empty name in '" + text + "'");
  }
  return parts;
}

void run(const LimitsArgs& args) {
  const model::LayerModel m = model::read_layer_model(args.model);
  std::vector<model::Target> targets;
  for (const auto& name : split_commas(args.hardware)) targets.push_back(model::make_target(m, name));
  // Each target's budget: --budget, or 80% of its memory.
  const bool budget_given = !args.budget.empty();
  std::vector<double> budgets;
  for (const auto& t : targets) {
    budgets.push_back(budget_given ? static_cast<double>(model::parse_size(args.budget, "--budget")) : model::default_budget(t));
    if (budget_given) t.check_budget(budgets.back());
  }
  const std::string budget_text = budget_given ? model::format_bytes(budgets.front()) : "80% of each device's memory";

  std::vector<std::string> header = {"strategy"};
  for (const auto& t : targets) header.push_back(t.name);
  Table table(header);
  nlohmann::json out = nlohmann::json::array();
  // Every catalog entry has a host link, so every target has the same rows.
  for (const auto& name : model::plan_names(targets.front())) {
    const model::Plan plan = model::expand_plan_name(name, m.layout());
    std::vector<std::string> row = {name};
    for (size_t k = 0; k < targets.size(); ++k) {
      const model::Target& t = targets[k];
      const double bytes = budgets[k];
      const int64_t largest = model::max_batch(m, t, plan, bytes);
      const model::Estimate e = largest > 0 ? model::predict(m, t, plan, largest) : model::Estimate{};
      out.push_back({{"hardware", t.name},
                     {"strategy", name},
                     {"budget_bytes", bytes},
                     {"max_batch", largest},
                     {"peak_bytes", e.peak_bytes},
                     {"samples_per_s", e.samples_per_s},
                     {"notes", t.notes}});
      row.push_back(largest > 0 ? std::to_string(largest) + " (" + fixed(e.samples_per_s, 0) + "/s)" : "-");
    }
    table.add_row(row);
  }
  if (args.json) {
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::cout << "papaya limits: " << m.network << " (" << m.precision << ", profiled on " << m.machine.device
            << "): largest batch (samples/s there), budget " << budget_text << "\n";
  table.print(std::cout);
  for (const auto& t : targets) {
    for (const auto& note : t.notes) std::cout << "note: " << t.name << ": " << note << "\n";
  }
}

}  // namespace

void register_limits(CLI::App& app) {
  auto args = std::make_shared<LimitsArgs>();
  auto* cmd =
      app.add_subcommand("limits", "The largest batch of each memory optimization on each hardware, from a model (papaya fit).");
  cmd->add_option("model", args->model, "Layer model (JSON, from papaya fit PROFILE)")->required();
  cmd->add_option("--hardware", args->hardware, "Catalog entries, comma-separated (papaya hardware)")->required();
  cmd->add_option("--budget", args->budget, "Memory budget (e.g. 24GiB); default: 80% of each device's memory");
  cmd->add_flag("--json", args->json, "One JSON document instead of a table");
  cmd->callback([args] { run(*args); });
}

}  // namespace papaya::cli
