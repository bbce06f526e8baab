// papaya recommend: profile a network at a few small batches, fit the layer
// model and plan within a memory budget, in one command; says which memory
// optimizations are worth it and why, the largest batch of each, and writes
// the plan file (and the model, for `papaya plan` with other budgets).
#include <chrono>
#include <ostream>

#include "cli/commands/commands.h"
#include "cli/options/network_choice.h"
#include "cli/options/network_option.h"
#include "cli/options/number_checks.h"
#include "cli/options/output_file.h"
#include "cli/options/parallel_options.h"
#include "cli/report/html_report.h"
#include "cli/report/layout_report.h"
#include "cli/report/plan_report.h"
#include "cli/report/progress.h"
#include "cli/report/report.h"
#include "cli/report/table.h"
#include "executor/device.h"
#include "executor/trainer.h"
#include "model/catalog/hardware.h"
#include "model/catalog/network_config.h"
#include "model/catalog/parameter_count.h"
#include "model/error.h"
#include "model/json_file.h"
#include "model/plan_space/predict.h"
#include "model/strategy_table.h"
#include "model/units.h"
#include "planner/planner.h"
#include "workflow/parallel_request.h"
#include "workflow/plan.h"
#include "workflow/profile_and_fit.h"

namespace papaya::cli {
namespace {

// The optimizations PAPAYA weighs one at a time against keep: every term of its whole-network plan names.
std::vector<std::string> single_optimizations() {
  std::vector<std::string> names;
  for (const auto& factor : model::plan_name_factors()) names.insert(names.end(), factor.begin(), factor.end());
  return names;
}

struct RecommendArgs {
  std::string network = default_network;
  std::optional<int> seq_len;
  NetworkOptions network_options;
  int profile_blocks = 0;  // 0: all if they fit
  int profile_parts = 0;   // 0: chosen
  std::string precision;   // "": the network's
  std::string device;      // empty: cuda where there is one, else cpu
  std::string hardware;
  std::string budget;
  int64_t batch = 0;  // 0: choose it
  std::string out;
  std::string html;
  ParallelOptions parallel;
};

struct Budget {
  double bytes = 0;
  std::string source;  // how it was set, for people
};

// A half-way budget, but no more than 80% of this device's memory.
Budget within_device(Budget half_way, const model::Target& target) {
  const double device = model::default_budget(target);
  if (half_way.bytes <= device) return half_way;
  return {device, "80% of this device's " + model::format_bytes(target.memory_bytes) + " (half-way, " +
                      model::format_bytes(half_way.bytes) + ", would pass it); set --budget, or --hardware for a GPU's"};
}

Budget choose_budget(const RecommendArgs& args, const model::LayerModel& m, const model::Target& target) {
  if (!args.budget.empty()) return {static_cast<double>(model::parse_size(args.budget, "--budget")), "--budget"};
  if (!args.hardware.empty()) {
    return {model::default_budget(target), "80% of the " + model::format_bytes(target.memory_bytes) + " of " + target.name};
  }
  const int64_t batch = args.batch > 0 ? args.batch : executor::TrainOptions{}.batch;
  const double keep = model::predict(m, target, model::expand_plan_name("keep", m.layout()), batch).peak_bytes;
  const std::string why = "so that there is something to plan; set --budget, or --hardware for a GPU's";
  const std::string to_keep = ") and keep's peak at batch " + std::to_string(batch) + " (" + model::format_bytes(keep) + "), ";
  const double half_way = m.static_bytes + (keep - m.static_bytes) / 2;
  // Where the memory a step needs beyond its state is mostly fixed, half-way
  // may fit nothing: then half-way from what batch 1 needs at least.
  double least = keep;
  for (const auto& name : model::plan_names(m, target)) {
    least = std::min(least, model::predict(m, target, model::expand_plan_name(name, m.layout()), 1).peak_bytes);
  }
  if (half_way >= least) {
    return within_device({half_way, "half-way between the weights, gradients and optimizer state (" +
                                        model::format_bytes(m.static_bytes) + to_keep + why},
                         target);
  }
  return within_device(
      {least + (keep - least) / 2, "half-way between the least batch 1 needs (" + model::format_bytes(least) + to_keep + why},
      target);
}

// One optimization alone against keep: what it saves and costs at the plan's
// batch, and PAPAYA's verdict within the budget.
struct Why {
  std::string name;
  double saves = 0, costs = 0;  // fractions of keep's peak and step time
  int64_t max_batch = 0;        // within the budget, PAPAYA's row
  double samples_per_s_there = 0;
  std::string verdict;   // plan_report.h's
  std::string sentence;  // the verdict in words
  int used = 0;          // tensors (segments, for recompute-all) the recommended plan gives it
};

// recompute-all is used by segments; every other optimization by tensors.
bool used_by_segments(const std::string& name) { return model::recomputes(model::plan_term_row(name)->form); }

int uses(const model::Plan& plan, const std::string& name) {
  if (used_by_segments(name)) return static_cast<int>(plan.segments.size());
  const model::StrategyRow& row = *model::plan_term_row(name);
  int count = 0;
  for (const auto& [key, s] : plan.tensors) {
    if (row.swaps ? s.swap : (!model::recomputes(s.form) && model::TensorStrategy{s.form, s.bits}.name() == name)) ++count;
  }
  return count;
}

std::string sentence(const planner::GlobalTable& table, const planner::GlobalRow& row) {
  const planner::GlobalRow& keep = table.keep();
  const std::string budget = model::format_bytes(table.budget_bytes);
  if (row.max_batch == 0) return "does not fit " + budget + " even at batch 1";
  std::string text = "within " + budget + " it reaches batch " + std::to_string(row.max_batch) + " at " +
                     per_second(row.best.samples_per_s) + " samples/s";
  if (keep.max_batch == 0) return "worth it alone: " + text + ", where keep does not fit at all";
  text += ", against keep's " + per_second(keep.best.samples_per_s) + " at batch " + std::to_string(keep.max_batch);
  return (row.helps ? "worth it alone: " : "not worth it alone: ") + text;
}

std::vector<Why> weigh(const model::LayerModel& m, const model::Target& target, const planner::PlanResult& r) {
  const auto names = model::plan_names(m, target);
  const model::Estimate keep = model::predict(m, target, model::expand_plan_name("keep", m.layout()), r.batch);
  std::vector<Why> out;
  for (const auto& name : single_optimizations()) {
    if (std::find(names.begin(), names.end(), name) == names.end()) continue;
    const model::Estimate e = model::predict(m, target, model::expand_plan_name(name, m.layout()), r.batch);
    const planner::GlobalRow* row = nullptr;
    for (const auto& candidate : r.global.rows) {
      if (candidate.name == name) row = &candidate;
    }
    out.push_back({name, 1 - e.peak_bytes / keep.peak_bytes, e.seconds / keep.seconds - 1, row->max_batch,
                   row->best.samples_per_s, verdict(r.global, *row), sentence(r.global, *row), uses(r.plan, name)});
  }
  return out;
}

std::string percent(double fraction) { return fixed(100 * fraction, 1) + "%"; }

struct Recommendation {
  model::LayerModel model;
  std::string hardware;
  std::string profiled_how;           // Profiled::how
  std::vector<int> profiled_batches;  // Profiled::batches
  std::vector<std::string> notes;     // the target's
  Budget budget;
  planner::PlanResult result;
  std::vector<Why> why;
  std::string out, model_path;  // where the plan and the model were written
  std::string html;             // and the report ("": none)
  double seconds = 0;           // profiling, fitting and planning
};

void to_json(nlohmann::json& doc, const Recommendation& r) {
  nlohmann::json reasons = nlohmann::json::array();
  for (const Why& w : r.why) {
    reasons.push_back({{"optimization", w.name},
                       {"saves", w.saves},
                       {"costs", w.costs},
                       {"max_batch", w.max_batch},
                       {"samples_per_s_there", w.samples_per_s_there},
                       {"verdict", w.verdict},
                       {"in_plan", w.used},
                       {"why", w.sentence}});
  }
  doc = result_json(r.model, r.result);
  doc.update({{"device", r.model.machine.device},
              {"profiled_batches", r.profiled_batches},
              {"profiled", r.profiled_how},
              {"budget_source", r.budget.source},
              {"why", reasons},
              {"out", r.out},
              {"model", r.model_path},
              {"html", r.html},
              {"seconds", r.seconds},
              {"notes", r.notes}});
}

void print_text(std::ostream& out, const Recommendation& rec) {
  const model::LayerModel& m = rec.model;
  const planner::PlanResult& r = rec.result;
  out << "papaya recommend: " << m.network << " (" << m.precision << ") profiled on " << m.machine.device_name << " ("
      << m.machine.device << ") " << rec.profiled_how << "; fitted and planned for " << rec.hardware << " in "
      << fixed(rec.seconds, 1) << " s\nbudget: " << model::format_bytes(rec.budget.bytes) << " (" << rec.budget.source << ")\n\n";
  print_plan(out, m, r);
  out << "\nwhy: each optimization alone against keep (saves and costs: at batch " << r.batch << ")\n";
  Table table(
      {"optimization", "saves (peak)", "costs (step time)", "largest batch", "samples/s there", "verdict", "in the plan"});
  for (const Why& w : rec.why) {
    table.add_row(
        {w.name, percent(w.saves), percent(w.costs), std::to_string(w.max_batch),
         w.max_batch > 0 ? per_second(w.samples_per_s_there) : "-", w.verdict,
         w.used ? std::to_string(w.used) + (used_by_segments(w.name) ? " segment" : " tensor") + (w.used > 1 ? "s" : "") : "-"});
  }
  table.print(out);
  for (const Why& w : rec.why) out << "  " << w.name << ": " << w.sentence << "\n";
  out << "\n";
  print_global(out, r, 12);
  for (const auto& note : rec.notes) out << "note: " << note << "\n";
  out << "plan written to " << rec.out << " (" << train_command(rec.out, r) << "); model written to " << rec.model_path
      << " (papaya plan " << rec.model_path << " --budget SIZE)\n";
  if (!rec.html.empty()) out << "report written to " << rec.html << "\n";
}

// The model beside the plan: x.plan.json -> x.model.json, x.json -> x.model.json.
std::string model_path_beside(const std::string& out) {
  const auto ends_with = [&](const std::string& tail) {
    return out.size() > tail.size() && out.substr(out.size() - tail.size()) == tail;
  };
  return out.substr(0, out.size() - (ends_with(".plan.json") ? 10 : ends_with(".json") ? 5 : 0)) + ".model.json";
}

workflow::Profiled profile(const RecommendArgs& args, const model::NetworkConfig& network, workflow::Reporter& reporter) {
  workflow::ProfileAndFitRequest profile;
  profile.network = network;
  profile.device = args.device.empty() ? executor::default_device() : args.device;
  profile.precision = args.precision;
  profile.hardware = args.hardware;
  profile.profile_blocks = args.profile_blocks;
  profile.shape_parts = args.profile_parts;
  return workflow::profile_and_fit(profile, reporter);
}

// Where the budget is known before profiling (--budget, or --hardware's) and
// each GPU's even share of the weights, gradients and AdamW state, counted
// from the config, passes it, nothing can fit: said before the profile,
// which for hundreds of billions of parameters takes minutes and gigabytes
// to reach the planner's same refusal. An archive's frozen parameters are
// known only once it is profiled.
void check_state_fits(const RecommendArgs& args, const model::NetworkConfig& network) {
  if (network.family == model::Family::torchscript || (args.budget.empty() && args.hardware.empty())) return;
  const double budget = !args.budget.empty() ? static_cast<double>(model::parse_size(args.budget, "--budget"))
                                             : model::default_budget_fraction * model::load_hardware(args.hardware).memory_bytes;
  const int gpus = args.parallel.gpus;
  const double state = model::static_state_bytes(network) / gpus;
  if (state <= budget) return;
  throw InputError("budget " + model::format_bytes(budget) + " is below the weights, gradients and optimizer state alone (" +
                   model::format_bytes(state) + (gpus > 1 ? " a GPU of " + std::to_string(gpus) : "") +
                   "): papaya limits --network " + args.network + " says how many GPUs it needs");
}

// The network laid out over many GPUs (a layout beyond data-parallel ranks).
void recommend_layouts(const RecommendArgs& args, const workflow::ParallelRequest& request, const Output& output) {
  const model::NetworkConfig network = load_network(args.network, args.seq_len, args.network_options);
  const std::string model_path = model_path_beside(args.out.empty() ? network.name + ".plan.json" : args.out);
  check_writable(model_path);
  ProgressReporter reporter;
  const workflow::Profiled profiled = profile(args, network, reporter);
  model::write_layer_model(model_path, profiled.model);
  show_layouts(profiled.model, args.parallel.emit, request, output, model_path);
}

// One GPU or data-parallel ranks, planned layer by layer.
Recommendation compute(const RecommendArgs& args, const workflow::ParallelRequest& parallel) {
  const auto start = std::chrono::steady_clock::now();
  const model::NetworkConfig network = load_network(args.network, args.seq_len, args.network_options);
  Recommendation rec;
  rec.out = args.out.empty() ? network.name + ".plan.json" : args.out;
  const std::string& out = rec.out;
  rec.model_path = model_path_beside(out);
  check_writable(out);
  if (!args.html.empty()) check_html_report(args.html);
  if (args.hardware.empty() && (args.device.empty() ? executor::default_device() : args.device) == "cpu") {
    parallel.require_link("this CPU");  // before profiling
  }
  check_state_fits(args, network);
  ProgressReporter reporter;
  workflow::Profiled profiled = profile(args, network, reporter);
  rec.model = profiled.model;
  rec.profiled_how = profiled.how;
  rec.profiled_batches = profiled.batches;
  const std::vector<int> stages = parallel.zero_stages(true);
  workflow::apply_data_parallel(profiled.target, profiled.model, parallel, stages.front());
  rec.hardware = profiled.target.name;
  rec.notes = profiled.target.notes;
  model::write_layer_model(rec.model_path, rec.model);
  rec.budget = choose_budget(args, rec.model, profiled.target);
  planner::PlanRequest request;
  request.budget_bytes = rec.budget.bytes;
  if (args.batch > 0) request.batch = args.batch;
  const workflow::Planned planned = workflow::plan(profiled.model, profiled.target, request, stages, reporter);
  rec.result = planned.result;
  model::write_json_file(out, planner::plan_document(rec.result, rec.model.layout()));
  rec.why = weigh(rec.model, planned.target, rec.result);
  if (!args.html.empty()) report_result(args.html, "recommend", rec.model, planned.target, rec.result);
  rec.html = args.html;
  rec.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return rec;
}

}  // namespace

void register_recommend(CLI::App& app) {
  auto args = std::make_shared<RecommendArgs>();
  auto* cmd = app.add_subcommand(
      "recommend",
      "Profile a network, fit its model and plan within a memory budget: which optimizations to train with, and why.");
  add_network_choice_options(cmd, args->network, args->seq_len, args->network_options, /*models=*/true);
  add_profile_blocks_option(cmd, args->profile_blocks);
  add_profile_parts_option(cmd, args->profile_parts);
  add_precision_option(cmd, args->precision);
  cmd->add_option("--device,-d", args->device, "cpu, cuda or cuda:N to profile on; default: cuda where there is one, else cpu");
  cmd->add_option("--hardware", args->hardware, "Catalog entry to plan for (papaya hardware); default: the profiled machine");
  cmd->add_option("--budget", args->budget,
                  "Memory budget (e.g. 24GiB); default: 80% of --hardware's memory, else half-way between the static bytes and "
                  "keep's peak at the default batch");
  cmd->add_option("--batch,-b", args->batch, "Plan at this batch; default: the batch with the most samples/s")
      ->check(positive(args->batch));
  cmd->add_option("--out,-o", args->out,
                  "Plan file to write; default: NETWORK.plan.json (the model goes beside it: NETWORK.model.json)");
  cmd->add_option("--html", args->html,
                  "A self-contained HTML report: the step's memory layer by layer under keep and the plan, the plans against "
                  "the batch, and PAPAYA's table");
  add_parallel_options(cmd, args->parallel, LayoutChoice::searched_stage);
  const auto output = add_output_options(cmd, "One JSON document instead of tables");
  cmd->callback([args, output] {
    std::optional<double> budget;
    if (!args->budget.empty()) budget = static_cast<double>(model::parse_size(args->budget, "--budget"));
    const workflow::ParallelRequest parallel =
        parallel_request(args->parallel, LayoutChoice::searched_stage, args->hardware, budget);
    parallel.validate();
    if (parallel.data_parallel_only()) return show(compute(*args, parallel), *output);
    refuse_with_layout({{"--html", args->html}});
    recommend_layouts(*args, parallel, *output);
  });
}

}  // namespace papaya::cli
