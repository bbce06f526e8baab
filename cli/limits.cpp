// papaya limits MODEL --hardware A,B,C: the largest batch of every
// whole-network plan on each catalog entry, under a memory budget.
#include "cli/commands.h"
#include "cli/report.h"
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
};

std::vector<std::string> split_commas(const std::string& text) {
  const std::vector<std::string> parts = model::split(text, ',');
  for (const auto& part : parts) {
    if (part.empty()) throw InputError("--hardware: empty name in '" + text + "'");
  }
  return parts;
}

struct Limit {
  int64_t max_batch = 0;
  model::Estimate estimate;  // at max_batch (none where nothing fits)
};

struct Limits {
  std::string network, precision, profiled_on, budget_text;
  std::vector<model::Target> targets;
  std::vector<double> budgets;             // one per target
  std::vector<std::string> strategies;     // the rows
  std::vector<std::vector<Limit>> limits;  // [strategy][target]
};

void to_json(nlohmann::json& out, const Limits& l) {
  out = nlohmann::json::array();
  for (size_t s = 0; s < l.strategies.size(); ++s) {
    for (size_t k = 0; k < l.targets.size(); ++k) {
      const Limit& limit = l.limits[s][k];
      out.push_back({{"hardware", l.targets[k].name},
                     {"strategy", l.strategies[s]},
                     {"budget_bytes", l.budgets[k]},
                     {"max_batch", limit.max_batch},
                     {"peak_bytes", limit.estimate.peak_bytes},
                     {"samples_per_s", limit.estimate.samples_per_s},
                     {"notes", l.targets[k].notes}});
    }
  }
}

void print_text(std::ostream& out, const Limits& l) {
  out << "papaya limits: " << l.network << " (" << l.precision << ", profiled on " << l.profiled_on
      << "): largest batch (samples/s there), budget " << l.budget_text << "\n";
  std::vector<std::string> header = {"strategy"};
  for (const auto& t : l.targets) header.push_back(t.name);
  Table table(header);
  for (size_t s = 0; s < l.strategies.size(); ++s) {
    std::vector<std::string> row = {l.strategies[s]};
    for (const Limit& limit : l.limits[s]) {
      row.push_back(limit.max_batch > 0 ? std::to_string(limit.max_batch) + " (" + fixed(limit.estimate.samples_per_s, 0) + "/s)"
                                        : "-");
    }
    table.add_row(row);
  }
  table.print(out);
  for (const auto& t : l.targets) {
    for (const auto& note : t.notes) out << "note: " << t.name << ": " << note << "\n";
  }
}

Limits compute(const LimitsArgs& args) {
  const model::LayerModel m = model::read_layer_model(args.model);
  Limits l;
  l.network = m.network;
  l.precision = m.precision;
  l.profiled_on = m.machine.device;
  for (const auto& name : split_commas(args.hardware)) l.targets.push_back(model::make_target(m, name));
  // Each target's budget: --budget, or 80% of its memory.
  const bool budget_given = !args.budget.empty();
  for (const auto& t : l.targets) {
    l.budgets.push_back(budget_given ? static_cast<double>(model::parse_size(args.budget, "--budget"))
                                     : model::default_budget(t));
    if (budget_given) t.check_budget(l.budgets.back());
  }
  l.budget_text = budget_given ? model::format_bytes(l.budgets.front()) : "80% of each device's memory";
  // Every catalog entry has a host link, so every target has the same rows.
  l.strategies = model::plan_names(l.targets.front());
  for (const auto& name : l.strategies) {
    const model::Plan plan = model::expand_plan_name(name, m.layout());
    std::vector<Limit>& row = l.limits.emplace_back();
    for (size_t k = 0; k < l.targets.size(); ++k) {
      const int64_t largest = model::max_batch(m, l.targets[k], plan, l.budgets[k]);
      row.push_back({largest, largest > 0 ? model::predict(m, l.targets[k], plan, largest) : model::Estimate{}});
    }
  }
  return l;
}

}  // namespace

void register_limits(CLI::App& app) {
  auto args = std::make_shared<LimitsArgs>();
  auto* cmd =
      app.add_subcommand("limits", "The largest batch of each memory optimization on each hardware, from a model (papaya fit).");
  cmd->add_option("model", args->model, "Layer model (JSON, from papaya fit PROFILE)")->required();
  cmd->add_option("--hardware", args->hardware, "Catalog entries, comma-separated (papaya hardware)")->required();
  cmd->add_option("--budget", args->budget, "Memory budget (e.g. 24GiB); default: 80% of each device's memory");
  const auto output = add_output_options(cmd);
  cmd->callback([args, output] { show(compute(*args), *output); });
}

}  // namespace papaya::cli
