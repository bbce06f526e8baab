// papaya plan MODEL --budget SIZE: the fastest plan within a memory budget —
// a strategy per saved tensor and a choice per segment, at a given batch or
// at the batch with the most samples/s — beside PAPAYA's table of
// whole-network combinations; --out writes the plan file `papaya train
// --plan FILE` runs.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/plan_report.h"
#include "cli/plot.h"
#include "model/json_file.h"
#include "model/units.h"
#include "planner/planner.h"

namespace papaya::cli {
namespace {

struct PlanArgs {
  std::string model;
  std::string budget;
  std::string hardware;
  int64_t batch = 0;  // 0: choose it
  std::string out;
  double variance = -1;  // < 0: no variance budget
  std::string plot;
  bool json = false;
};

void run(const PlanArgs& args) {
  if (!args.plot.empty()) check_plot_path(args.plot);
  const model::LayerModel m = model::read_layer_model(args.model);
  const model::Target target = model::make_target(m, args.hardware);
  planner::PlanRequest request;
  request.budget_bytes = static_cast<double>(model::parse_size(args.budget, "--budget"));
  if (args.batch > 0) request.batch = args.batch;
  if (args.variance >= 0) request.variance_budget = args.variance;
  const planner::PlanResult result = planner::make_plan(m, target, request);
  if (!args.out.empty()) model::write_json_file(args.out, planner::plan_document(result));
  if (!args.plot.empty()) plot_result(args.plot, m, target, result);
  if (args.json) {
    nlohmann::json doc = result_json(m, result);
    doc["out"] = args.out;
    doc["plot"] = args.plot;
    doc["notes"] = target.notes;
    std::cout << doc.dump(2) << "\n";
    return;
  }
  std::cout << "papaya plan: " << m.network << " (" << m.precision << ", profiled on " << m.machine.device << ") on "
            << target.name << ", budget " << model::format_bytes(request.budget_bytes)
            << "; weights, gradients and optimizer state: " << model::format_bytes(m.static_bytes) << "\n\n";
  print_plan(std::cout, m, result);
  std::cout << "\n";
  print_global(std::cout, result, 8);
  for (const auto& note : target.notes) std::cout << "note: " << note << "\n";
  if (!args.out.empty()) std::cout << "plan written to " << args.out << " (papaya train --plan " << args.out << ")\n";
  if (!args.plot.empty()) std::cout << "figure written to " << args.plot << "\n";
}

}  // namespace

void register_plan(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  auto* cmd = app.add_subcommand(
      "plan", "The fastest per-layer plan within a memory budget, beside PAPAYA's table, from a model (papaya fit).");
  cmd->add_option("model", args->model, "Layer model (JSON, from papaya fit PROFILE)")->required();
  cmd->add_option("--budget", args->budget, "Memory budget for the step's peak (e.g. 24GiB)")->required();
  cmd->add_option("--hardware", args->hardware, "Catalog entry to plan for (papaya hardware); default: the profiled machine");
  cmd->add_option("--batch,-b", args->batch, "Plan at this batch; default: the batch with the most samples/s")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--out,-o", args->out, "Plan file to write (JSON, for papaya train --plan FILE)");
  cmd->add_option("--variance", args->variance,
                  "Gradient-variance budget of lossy strategies, as a fraction of quantize-2 everywhere (0: lossless only)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--plot", args->plot, "Figure of memory and samples/s against the batch (.svg or .png)");
  cmd->add_flag("--json", args->json, "One JSON document instead of tables");
  cmd->callback([args] { run(*args); });
}

}  // namespace papaya::cli
