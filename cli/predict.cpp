// papaya predict MODEL --batch B: peak memory, samples/s and the largest batch
// that fits, for every whole-network plan (or one --plan), on the profiled
// machine or a catalog entry; --plot draws them against the batch.
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/plot.h"
#include "cli/prediction_plot.h"
#include "cli/table.h"
#include "model/predict.h"
#include "model/units.h"

namespace papaya::cli {
namespace {

struct PredictArgs {
  std::string model;
  std::string hardware;
  int64_t batch = 0;
  std::string plan;
  std::string budget;
  std::string plot;
  bool json = false;
};

std::string where(const model::LayerModel& m, const model::Estimate& e) {
  return std::string(model::to_string(e.peak_at.phase)) + " " + m.layers[static_cast<size_t>(e.peak_at.layer)].path;
}

// Peak memory and samples/s against the batch of keep and the plans shown
// (with no --plan: the fastest that fit at --batch, at most seven besides
// keep, so that the figure stays readable), each marked at --batch.
void plot_predictions(const PredictArgs& args, const model::LayerModel& m, const model::Target& target,
                      const std::vector<model::Plan>& shown, double budget) {
  std::vector<std::pair<const model::Plan*, model::Estimate>> ranked;
  for (const auto& plan : shown) ranked.push_back({&plan, model::predict(m, target, plan, args.batch)});
  std::stable_sort(ranked.begin(), ranked.end(), [&](const auto& a, const auto& b) {
    const bool fa = a.second.peak_bytes <= budget, fb = b.second.peak_bytes <= budget;
    return fa != fb ? fa : a.second.samples_per_s > b.second.samples_per_s;
  });
  std::vector<std::pair<std::string, model::Plan>> plans = {{"keep", model::expand_plan_name("keep", m.layout())}};
  int64_t top = 2 * args.batch;
  for (const auto& [plan, e] : ranked) {
    if (plans.size() >= 8) break;
    if (plan->name != "keep") plans.push_back({plan->name, *plan});
  }
  for (const auto& [name, plan] : plans) top = std::max<int64_t>(top, model::max_batch(m, target, plan, budget) * 5 / 4);
  PredictionPanels panels = prediction_panels(m, target, plans, top, budget);
  for (size_t i = 0; i < plans.size(); ++i) {
    const model::Estimate e = model::predict(m, target, plans[i].second, args.batch);
    panels.memory.series[i].points.push_back({static_cast<double>(args.batch), e.peak_bytes / panels.bytes_per_unit});
    if (e.peak_bytes <= budget) panels.throughput.series[i].points.push_back({static_cast<double>(args.batch), e.samples_per_s});
  }
  write_plot(args.plot, m.network + " on " + target.name + ": predicted (marked: batch " + std::to_string(args.batch) + ")",
             {panels.memory, panels.throughput});
}

void run(const PredictArgs& args) {
  if (!args.plot.empty()) check_plot_path(args.plot);
  const model::LayerModel m = model::read_layer_model(args.model);
  const model::Target target = model::make_target(m, args.hardware);
  const double budget =
      args.budget.empty() ? model::default_budget(target) : static_cast<double>(model::parse_size(args.budget, "--budget"));
  target.check_budget(budget);
  std::vector<model::Plan> plans;
  if (!args.plan.empty()) {
    plans.push_back(model::load_plan(args.plan, m.layout(), m.network));
  } else {
    for (const auto& name : model::plan_names(target)) plans.push_back(model::expand_plan_name(name, m.layout()));
  }
  std::vector<std::string> notes = target.notes;
  if (const auto note = model::extrapolation_note(m, args.batch)) notes.push_back(*note);
  const model::Plan keep = model::expand_plan_name("keep", m.layout());
  const double keep_rate = model::predict(m, target, keep, args.batch).samples_per_s;

  nlohmann::json out = nlohmann::json::array();
  Table table({"strategy", "peak memory", "fits", "samples/s", "vs keep", "largest batch", "peak at"});
  for (const auto& plan : plans) {
    const model::Estimate e = model::predict(m, target, plan, args.batch);
    const int64_t largest = model::max_batch(m, target, plan, budget);
    out.push_back({{"strategy", plan.name},
                   {"batch", args.batch},
                   {"peak_bytes", e.peak_bytes},
                   {"samples_per_s", e.samples_per_s},
                   {"max_batch", largest},
                   {"seconds", e.seconds},
                   {"host_bytes", e.host_bytes},
                   {"static_bytes", m.static_bytes},
                   {"peak_at", where(m, e)},
                   {"hardware", target.name},
                   {"budget_bytes", budget},
                   {"notes", notes}});
    table.add_row({plan.name, model::format_bytes(e.peak_bytes), e.peak_bytes <= budget ? "yes" : "no", fixed(e.samples_per_s, 1),
                   fixed(e.samples_per_s / keep_rate, 2), std::to_string(largest), where(m, e)});
  }
  if (!args.plot.empty()) plot_predictions(args, m, target, plans, budget);
  if (args.json) {
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::cout << "papaya predict: " << m.network << " (" << m.precision << ", profiled on " << m.machine.device << ") on "
            << target.name << ", batch " << args.batch << ", budget " << model::format_bytes(budget)
            << (args.budget.empty() ? " (80% of " + model::format_bytes(target.memory_bytes) + ")" : "")
            << "; weights, gradients and optimizer state: " << model::format_bytes(m.static_bytes) << "\n";
  table.print(std::cout);
  for (const auto& note : notes) std::cout << "note: " << note << "\n";
  if (!args.plot.empty()) std::cout << "figure written to " << args.plot << "\n";
}

}  // namespace

void register_predict(CLI::App& app) {
  auto args = std::make_shared<PredictArgs>();
  auto* cmd = app.add_subcommand(
      "predict", "Predict peak memory, samples/s and the largest batch of each memory optimization from a model (papaya fit).");
  cmd->add_option("model", args->model, "Layer model (JSON, from papaya fit PROFILE)")->required();
  cmd->add_option("--batch,-b", args->batch, "Samples per step")->required()->check(CLI::PositiveNumber);
  cmd->add_option("--hardware", args->hardware, "Catalog entry to predict for (papaya hardware); default: the profiled machine");
  cmd->add_option("--plan", args->plan, "One plan, by name (quantize-4+invert, ...) or plan file, instead of every combination");
  cmd->add_option("--budget", args->budget,
                  "Memory budget for the largest batch (e.g. 24GiB); default: 80% of the device memory");
  cmd->add_option(
      "--plot", args->plot,
      "Figure of memory and samples/s against the batch (.svg or .png): keep and the fastest plans that fit at --batch");
  cmd->add_flag("--json", args->json, "One JSON document instead of a table");
  cmd->callback([args] { run(*args); });
}

}  // namespace papaya::cli
