// papaya predict MODEL --batch B: peak memory, samples/s and the largest batch
// that fits, for every whole-network plan (or one --plan), on the profiled
// machine or a catalog entry; --plot draws them against the batch. Given a
// global model (fit --measurements --out), each measured series at --batch.
#include "model/plan_space/predict.h"
#include <algorithm>
#include "cli/commands/commands.h"
#include "cli/options/number_checks.h"
#include "cli/options/parallel_options.h"
#include "cli/report/data_parallel_text.h"
#include "cli/report/global_prediction.h"
#include "cli/report/html_report.h"
#include "cli/report/layout_report.h"
#include "cli/report/plot.h"
#include "cli/report/prediction_plot.h"
#include "cli/report/report.h"
#include "cli/report/step_timeline.h"
#include "cli/report/table.h"
#include "model/error.h"
#include "model/fit/global_model.h"
#include "model/fit/global_predict.h"
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
  std::string html;
  ParallelOptions parallel;
};

// Keep and the plans a figure shows: with no --plan, the fastest that fit at
// --batch (at most seven besides keep, so that it stays readable), the
// fastest first; and the batch its axis reaches.
struct Shown {
  std::vector<std::pair<std::string, model::Plan>> plans;
  int64_t top = 0;
};
Shown shown_plans(const PredictArgs& args, const model::LayerModel& m, const model::Target& target,
                  const std::vector<model::Plan>& candidates, double budget) {
  std::vector<std::pair<const model::Plan*, model::Estimate>> ranked;
  for (const auto& plan : candidates) ranked.push_back({&plan, model::predict(m, target, plan, args.batch)});
  std::stable_sort(ranked.begin(), ranked.end(), [&](const auto& a, const auto& b) {
    const bool fa = a.second.peak_bytes <= budget, fb = b.second.peak_bytes <= budget;
    return fa != fb ? fa : a.second.samples_per_s > b.second.samples_per_s;
  });
  Shown out{{{"keep", model::expand_plan_name("keep", m.layout())}}, 2 * args.batch};
  for (const auto& [plan, e] : ranked) {
    if (out.plans.size() >= 8) break;
    if (plan->name != "keep") out.plans.push_back({plan->name, *plan});
  }
  for (const auto& [name, plan] : out.plans)
    out.top = std::max<int64_t>(out.top, model::max_batch(m, target, plan, budget) * 5 / 4);
  return out;
}

// Peak memory and samples/s against the batch of the plans shown, each marked at --batch.
PredictionPanels marked_panels(const PredictArgs& args, const model::LayerModel& m, const model::Target& target,
                               const Shown& shown, double budget) {
  const auto& plans = shown.plans;
  PredictionPanels panels = prediction_panels(m, target, plans, shown.top, budget);
  for (size_t i = 0; i < plans.size(); ++i) {
    const model::Estimate e = model::predict(m, target, plans[i].second, args.batch);
    panels.memory.series[i].points.push_back({static_cast<double>(args.batch), e.peak_bytes / panels.bytes_per_unit});
    if (e.peak_bytes <= budget) panels.throughput.series[i].points.push_back({static_cast<double>(args.batch), e.samples_per_s});
  }
  panels.memory.points_label = panels.throughput.points_label = "batch " + std::to_string(args.batch);
  return panels;
}

void plot_predictions(const PredictArgs& args, const model::LayerModel& m, const model::Target& target,
                      const std::vector<model::Plan>& candidates, double budget) {
  const PredictionPanels panels = marked_panels(args, m, target, shown_plans(args, m, target, candidates, budget), budget);
  write_plot(args.plot, m.network + " on " + target.name + ": predicted (marked: batch " + std::to_string(args.batch) + ")",
             {panels.memory, panels.throughput});
}

struct PredictedPlan {
  std::string name;
  model::Estimate estimate;
  int64_t max_batch = 0;
  std::string peak_at;
};

struct Prediction {
  std::string network, precision, profiled_on, hardware;
  int64_t batch = 0;
  double budget = 0;
  std::string budget_default;  // "(80% of ...)" where --budget was not given
  double static_bytes = 0;     // per GPU
  nlohmann::json data_parallel;
  std::string data_parallel_text;
  double keep_rate = 0;  // keep's samples/s at the batch
  std::vector<PredictedPlan> plans;
  std::vector<std::string> notes;
  std::string plot, html;
};

void to_json(nlohmann::json& out, const Prediction& p) {
  out = nlohmann::json::array();
  for (const auto& plan : p.plans) {
    const model::Estimate& e = plan.estimate;
    out.push_back({{"strategy", plan.name},
                   {"batch", p.batch},
                   {"peak_bytes", e.peak_bytes},
                   {"samples_per_s", e.samples_per_s},
                   {"max_batch", plan.max_batch},
                   {"seconds", e.seconds},
                   {"host_bytes", e.host_bytes},
                   {"static_bytes", p.static_bytes},
                   {"peak_at", plan.peak_at},
                   {"hardware", p.hardware},
                   {"data_parallel", p.data_parallel},
                   {"budget_bytes", p.budget},
                   {"notes", p.notes}});
  }
}

void print_text(std::ostream& out, const Prediction& p) {
  const std::string per_gpu = p.data_parallel_text.empty() ? "" : " per GPU";
  out << "papaya predict: " << p.network << " (" << p.precision << ", profiled on " << p.profiled_on << ") on " << p.hardware
      << p.data_parallel_text << ", batch " << p.batch << per_gpu << ", budget " << model::format_bytes(p.budget) << per_gpu
      << p.budget_default << "; weights, gradients and optimizer state" << per_gpu << ": " << model::format_bytes(p.static_bytes)
      << (per_gpu.empty() ? "" : "; samples/s of all GPUs") << "\n";
  Table table({"strategy", "peak memory", "fits", "samples/s", "vs keep", "largest batch", "peak at"});
  for (const auto& plan : p.plans) {
    const model::Estimate& e = plan.estimate;
    table.add_row({plan.name, model::format_bytes(e.peak_bytes), e.peak_bytes <= p.budget ? "yes" : "no",
                   per_second(e.samples_per_s), fixed(e.samples_per_s / p.keep_rate, 2), std::to_string(plan.max_batch),
                   plan.peak_at});
  }
  table.print(out);
  for (const auto& note : p.notes) out << "note: " << note << "\n";
  if (!p.plot.empty()) out << "figure written to " << p.plot << "\n";
  if (!p.html.empty()) out << "report written to " << p.html << "\n";
}

// The page of --html: the step's timeline under keep and the chosen plan
// (the first the figure shows after keep: --plan, else the fastest that fits
// at --batch), the plans against the batch, and the table.
void write_report(const PredictArgs& args, const model::LayerModel& m, const model::Target& target,
                  const std::vector<model::Plan>& candidates, const Prediction& p) {
  const Shown shown = shown_plans(args, m, target, candidates, p.budget);
  nlohmann::json timelines = nlohmann::json::array();
  for (size_t i = 0; i < std::min<size_t>(2, shown.plans.size()); ++i) {
    timelines.push_back(step_timeline(m, target, shown.plans[i].second, p.batch));
  }
  const PredictionPanels panels = marked_panels(args, m, target, shown, p.budget);
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& plan : p.plans) {
    const model::Estimate& e = plan.estimate;
    rows.push_back({plan.name, model::format_bytes(e.peak_bytes), e.peak_bytes <= p.budget ? "yes" : "no",
                    per_second(e.samples_per_s), std::to_string(plan.max_batch), plan.peak_at});
  }
  write_html_report(
      args.html,
      {{"title",
        "papaya predict: " + p.network + " on " + p.hardware + p.data_parallel_text + ", batch " + std::to_string(p.batch)},
       {"subtitle",
        p.precision + ", profiled on " + p.profiled_on + "; budget " + model::format_bytes(p.budget) + p.budget_default},
       {"timelines", timelines},
       {"curves", {{"memory", panel_json(panels.memory, shown.top)}, {"throughput", panel_json(panels.throughput, shown.top)}}},
       {"columns", {"plan", "peak memory", "fits", "samples/s", "largest batch", "peak at"}},
       {"plans", rows}});
}

// On data-parallel ranks (or one GPU).
Prediction compute(const PredictArgs& args, const workflow::ParallelRequest& parallel) {
  if (!args.plot.empty()) check_plot_path(args.plot);
  if (!args.html.empty()) check_html_report(args.html);
  const model::LayerModel m = model::read_layer_model(args.model);
  model::Target target = model::make_target(m, args.hardware);
  workflow::apply_data_parallel(target, m, parallel, parallel.zero_stages(false).front());
  Prediction p;
  p.network = m.network;
  p.precision = m.precision;
  p.profiled_on = m.machine.device;
  p.hardware = target.name;
  p.batch = args.batch;
  p.budget =
      args.budget.empty() ? model::default_budget(target) : static_cast<double>(model::parse_size(args.budget, "--budget"));
  target.check_budget(p.budget);
  if (args.budget.empty()) p.budget_default = " (80% of " + model::format_bytes(target.memory_bytes) + ")";
  p.static_bytes = model::static_bytes_per_rank(m, target.data_parallel);
  p.data_parallel = data_parallel_json(target.data_parallel);
  p.data_parallel_text = data_parallel_text(target.data_parallel);
  std::vector<model::Plan> plans;
  if (!args.plan.empty()) {
    plans.push_back(model::load_plan(args.plan, m.layout(), m.network));
  } else {
    for (const auto& name : model::plan_names(m, target)) plans.push_back(model::expand_plan_name(name, m.layout()));
  }
  p.notes = target.notes;
  if (const auto note = model::extrapolation_note(m, args.batch)) p.notes.push_back(*note);
  const model::Plan keep = model::expand_plan_name("keep", m.layout());
  const model::PlanSpace space(m, target, args.batch);  // indexed once for every plan: long for many layers
  p.keep_rate = space.evaluate(space.assignment(keep)).samples_per_s;
  for (const auto& plan : plans) {
    const model::Assignment a = space.assignment(plan);
    const model::Estimate e = space.evaluate(a);
    p.plans.push_back({plan.name, e, model::max_batch(space, a, p.budget), model::peak_location(m, e)});
  }
  if (!args.plot.empty()) plot_predictions(args, m, target, plans, p.budget);
  p.plot = args.plot;
  if (!args.html.empty()) write_report(args, m, target, plans, p);
  p.html = args.html;
  return p;
}

// A global model (fit --measurements --out): its series at --batch and
// --budget, on the GPUs their runs were measured on.
GlobalPredictionReport predict_from_global(const PredictArgs& args) {
  if (!args.hardware.empty() || !args.plan.empty() || !args.plot.empty() || !args.html.empty() ||
      args.parallel.gpus_requested() || args.parallel.layout_requested()) {
    throw InputError("predict " + args.model +
                     ": a global model predicts the GPUs and strategies its runs were measured with; --hardware, --plan, "
                     "--plot, --html, --gpus and a layout go with a layer model (papaya fit PROFILE)");
  }
  std::optional<double> budget;
  if (!args.budget.empty()) budget = static_cast<double>(model::parse_size(args.budget, "--budget"));
  return {"predict", args.model,
          model::predict_global(model::load_global_model(args.model), args.model, static_cast<int>(args.batch), budget)};
}

}  // namespace

void register_predict(CLI::App& app) {
  auto args = std::make_shared<PredictArgs>();
  auto* cmd = app.add_subcommand(
      "predict", "Predict peak memory, samples/s and the largest batch of each memory optimization from a model (papaya fit).");
  cmd->add_option("model", args->model,
                  "Model (JSON): a layer model (papaya fit PROFILE), or a global model (papaya fit --measurements --out): "
                  "each measured series at --batch and --budget")
      ->required();
  cmd->add_option("--batch,-b", args->batch, "Samples per step")->required()->check(positive(args->batch));
  cmd->add_option("--hardware", args->hardware, "Catalog entry to predict for (papaya hardware); default: the profiled machine");
  cmd->add_option("--plan", args->plan, "One plan, by name (quantize-4+invert, ...) or plan file, instead of every combination");
  cmd->add_option("--budget", args->budget,
                  "Memory budget for the largest batch (e.g. 24GiB); default: 80% of the device memory (a global model: "
                  "each GPU's memory)");
  cmd->add_option(
      "--plot", args->plot,
      "Figure of memory and samples/s against the batch (.svg or .png): keep and the fastest plans that fit at --batch");
  cmd->add_option("--html", args->html,
                  "A self-contained HTML report: the step's memory layer by layer under keep and the chosen plan, the plans "
                  "against the batch, and the tables");
  add_parallel_options(cmd, args->parallel, LayoutChoice::given);
  const auto output = add_output_options(cmd);
  cmd->callback([args, output] {
    const workflow::ParallelRequest parallel =
        parallel_request(args->parallel, LayoutChoice::given, args->hardware, std::nullopt);
    parallel.validate();
    if (!parallel.data_parallel_only()) {
      refuse_with_layout({{"--plot", args->plot}, {"--html", args->html}});
      // --batch is each GPU's micro-batch.
      const model::ParallelLayout layout = given_layout(args->parallel, static_cast<int>(args->batch));
      return show_layout_prediction(model::read_layer_model(args->model), args->parallel.emit, parallel, layout, args->plan,
                                    *output);
    }
    if (model::is_global_model_file(args->model)) return show(predict_from_global(*args), *output);
    show(compute(*args, parallel), *output);
  });
}

}  // namespace papaya::cli
