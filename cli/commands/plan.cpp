// papaya plan MODEL --budget SIZE: the fastest plan within a memory budget —
// a strategy per saved tensor and a choice per segment, at a given batch or
// at the batch with the most samples/s — beside PAPAYA's table of
// whole-network combinations; --out writes the plan file `papaya train
// --plan FILE` runs.
#include "workflow/plan.h"
#include "cli/commands/commands.h"
#include "cli/options/number_checks.h"
#include "cli/options/parallel_options.h"
#include "cli/report/html_report.h"
#include "cli/report/layout_report.h"
#include "cli/report/plan_report.h"
#include "cli/report/plot.h"
#include "cli/report/report.h"
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
  std::string html;
  ParallelOptions parallel;
};

// What `papaya plan` reports: the plan and where it was written.
struct PlanReport {
  model::LayerModel model;
  std::string hardware;
  std::vector<std::string> notes;
  double budget = 0;
  planner::PlanResult result;
  std::string out, plot, html;  // where the plan, the figure and the report were written ("": not)
};

void to_json(nlohmann::json& out, const PlanReport& p) {
  out = result_json(p.model, p.result);
  out["out"] = p.out;
  out["plot"] = p.plot;
  out["html"] = p.html;
  out["notes"] = p.notes;
}

void print_text(std::ostream& out, const PlanReport& p) {
  const model::LayerModel& m = p.model;
  out << "papaya plan: " << m.network << " (" << m.precision << ", profiled on " << m.machine.device << ") on " << p.hardware
      << ", budget " << model::format_bytes(p.budget)
      << "; weights, gradients and optimizer state: " << model::format_bytes(m.static_bytes) << "\n\n";
  print_plan(out, m, p.result);
  out << "\n";
  print_global(out, p.result, 8);
  for (const auto& note : p.notes) out << "note: " << note << "\n";
  if (!p.out.empty()) out << "plan written to " << p.out << " (" << train_command(p.out, p.result) << ")\n";
  if (!p.plot.empty()) out << "figure written to " << p.plot << "\n";
  if (!p.html.empty()) out << "report written to " << p.html << "\n";
}

// Data-parallel ranks (or one GPU), planned layer by layer.
PlanReport compute(const PlanArgs& args, const workflow::ParallelRequest& parallel) {
  if (!args.plot.empty()) check_plot_path(args.plot);
  if (!args.html.empty()) check_html_report(args.html);
  PlanReport p;
  p.model = model::read_layer_model(args.model);
  model::Target target = model::make_target(p.model, args.hardware);
  const std::vector<int> stages = parallel.zero_stages(true);
  workflow::apply_data_parallel(target, p.model, parallel, stages.front());
  p.hardware = target.name;
  p.notes = target.notes;
  planner::PlanRequest request;
  request.budget_bytes = *parallel.budget_bytes;
  if (args.batch > 0) request.batch = args.batch;
  if (args.variance >= 0) request.variance_budget = args.variance;
  p.budget = request.budget_bytes;
  workflow::SilentReporter quiet;
  const workflow::Planned planned = workflow::plan(p.model, target, request, stages, quiet);
  p.result = planned.result;
  if (!args.out.empty()) model::write_json_file(args.out, planner::plan_document(p.result, p.model.layout()));
  if (!args.plot.empty()) plot_result(args.plot, p.model, planned.target, p.result);
  if (!args.html.empty()) report_result(args.html, "plan", p.model, planned.target, p.result);
  p.out = args.out;
  p.plot = args.plot;
  p.html = args.html;
  return p;
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
      ->check(positive(args->batch));
  cmd->add_option("--out,-o", args->out, "Plan file to write (JSON, for papaya train --plan FILE; with --gpus N, --layout FILE)");
  cmd->add_option("--variance", args->variance,
                  "Gradient-variance budget of lossy strategies, as a fraction of quantize-2 everywhere (0: lossless only)")
      ->check(non_negative(args->variance));
  cmd->add_option("--plot", args->plot, "Figure of memory and samples/s against the batch (.svg or .png)");
  cmd->add_option("--html", args->html,
                  "A self-contained HTML report: the step's memory layer by layer under keep and the plan, the plans against "
                  "the batch, and PAPAYA's table");
  add_parallel_options(cmd, args->parallel, LayoutChoice::searched_stage);
  const auto output = add_output_options(cmd, "One JSON document instead of tables");
  cmd->callback([args, output] {
    const double budget = static_cast<double>(model::parse_size(args->budget, "--budget"));
    const workflow::ParallelRequest parallel =
        parallel_request(args->parallel, LayoutChoice::searched_stage, args->hardware, budget);
    parallel.validate();
    if (parallel.data_parallel_only()) return show(compute(*args, parallel), *output);
    refuse_with_layout({{"--out", args->out}, {"--plot", args->plot}, {"--html", args->html}});
    show_layouts(model::read_layer_model(args->model), args->parallel.emit, parallel, *output);
  });
}

}  // namespace papaya::cli
