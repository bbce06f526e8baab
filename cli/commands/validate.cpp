// papaya validate: how well the performance model predicts on this machine.
// Profiles a network at small batches and fits its model (as recommend does),
// predicts peak memory and samples/s of each plan at larger batches, then
// trains each (plan, batch) for a few steps and prints predicted beside
// measured (samples/s at the median step: the steady pace the model predicts,
// which a slow moment of a shared machine does not move), with R², the
// median and the largest error of each; --plot draws the predicted curves
// with the measured points.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "cli/commands/commands.h"
#include "cli/options/network_choice.h"
#include "cli/options/network_option.h"
#include "cli/options/number_checks.h"
#include "cli/report/html_report.h"
#include "cli/report/plot.h"
#include "cli/report/prediction_plot.h"
#include "cli/report/progress.h"
#include "cli/report/report.h"
#include "cli/report/step_timeline.h"
#include "cli/report/table.h"
#include "executor/trainer.h"
#include "model/curves.h"
#include "model/error.h"
#include "model/median.h"
#include "model/plan.h"
#include "model/plan_space/predict.h"
#include "model/strategy_table.h"
#include "model/units.h"
#include "profiler/out_of_memory.h"
#include "workflow/profile_and_fit.h"
#include "workflow/training/train_run.h"

namespace papaya::cli {
namespace {

// What papaya aims for on a CPU (bench/prediction_accuracy.sh): the peak
// within 3%, samples/s within 15%.
constexpr double memory_target_pct = 3;
constexpr double throughput_target_pct = 15;

struct ValidateArgs {
  workflow::TrainRun run;  // each (plan, batch) trains as this, with its plan and batch
  std::optional<int> seq_len;
  NetworkOptions network_options;
  std::vector<int64_t> batches = {8, 16, 32};
  std::vector<std::string> plans = {"keep", "recompute-all", "quantize-4", "invert"};
  std::vector<int> profile_batches;  // empty: workflow::default_profile_batches
  int profile_parts = 0;             // 0: chosen
  std::string plot;
  std::string html;
  ValidateArgs() { run.steps = 10; }  // a check, not a benchmark: quick
};

struct Row {
  std::string plan;
  int64_t batch = 0;
  model::Estimate predicted;
  bool out_of_memory = false;
  double measured_peak = 0, measured_rate = 0;  // when it did not run out
};

// How close the predictions of one measure came, over the rows that ran.
struct Accuracy {
  std::optional<double> r2;                                   // absent where every measurement is the same
  std::optional<double> median_abs_err_pct, max_abs_err_pct;  // absent with no rows
  size_t rows = 0, within_target = 0;
  double target_pct = 0;
};

Accuracy accuracy(const std::vector<double>& predicted, const std::vector<double>& measured, double target_pct) {
  Accuracy a;
  a.target_pct = target_pct;
  a.rows = measured.size();
  if (measured.empty()) return a;
  std::vector<double> errors;
  for (size_t i = 0; i < measured.size(); ++i) errors.push_back(100 * std::abs(error_fraction(predicted[i], measured[i])));
  a.r2 = model::r_squared(measured, predicted);
  a.median_abs_err_pct = model::median(errors);
  a.max_abs_err_pct = *std::max_element(errors.begin(), errors.end());
  a.within_target = std::count_if(errors.begin(), errors.end(), [&](double e) { return e <= target_pct; });
  return a;
}

void to_json(nlohmann::json& out, const Accuracy& a) {
  const auto value = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  out = {{"r2", value(a.r2)},
         {"median_abs_err_pct", value(a.median_abs_err_pct)},
         {"max_abs_err_pct", value(a.max_abs_err_pct)},
         {"rows", a.rows},
         {"rows_within_target", a.within_target},
         {"target_abs_err_pct", a.target_pct}};
}

// "R² 0.998, median |error| 0.4%, max 1.2%: 12 of 12 within 3% (the CPU target)"
std::string sentence(const Accuracy& a) {
  if (a.rows == 0) return "no run finished";
  return "R² " + (a.r2 ? fixed(*a.r2, 4) : std::string("- (every measurement the same)")) + ", median |error| " +
         fixed(*a.median_abs_err_pct, 1) + "%, max " + fixed(*a.max_abs_err_pct, 1) + "%: " + std::to_string(a.within_target) +
         " of " + std::to_string(a.rows) + " within the CPU target of " + fixed(a.target_pct, 0) + "%";
}

template <typename T>
std::string joined(const std::vector<T>& values) {
  std::ostringstream out;
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  return out.str();
}

// Everything that can be checked before profiling, so that bad input costs
// nothing and writes nothing.
void check(ValidateArgs& args) {
  args.run.network_config = load_network(args.run.network, args.seq_len, args.network_options);
  workflow::prepare_train_run(args.run);
  if (args.batches.empty()) throw InputError("--batches: give at least one batch size");
  std::sort(args.batches.begin(), args.batches.end());
  args.batches.erase(std::unique(args.batches.begin(), args.batches.end()), args.batches.end());
  if (args.profile_batches.empty()) args.profile_batches = workflow::default_profile_batches(*args.run.network_config);
  std::sort(args.profile_batches.begin(), args.profile_batches.end());
  args.profile_batches.erase(std::unique(args.profile_batches.begin(), args.profile_batches.end()), args.profile_batches.end());
  if (args.profile_batches.size() < 2) throw InputError("--profile-batches: the fit needs two batch sizes or more");
  if (args.plans.empty()) throw InputError("--plans: give at least one plan");
  std::vector<std::string> plans;
  for (const auto& name : args.plans) {
    if (name.empty()) throw InputError("--plans: an empty plan name");
    if (!model::is_plan_name(name)) {
      try {
        model::expand_plan_name(name, model::NetworkLayout{});  // says what is wrong with the name
      } catch (const InputError& e) {
        throw InputError(std::string("--plans: ") + e.what());
      }
    }
    for (const std::string& term : model::split(name, '+')) {
      if (model::plan_term_row(term)->swaps && args.run.device.rfind("cuda", 0) != 0) {
        throw InputError("--plans: plan '" + name + "' swaps to host memory, which needs a CUDA device (--device " +
                         args.run.device + ")");
      }
    }
    if (std::find(plans.begin(), plans.end(), name) == plans.end()) plans.push_back(name);
  }
  args.plans = plans;
  const int warmup = executor::TrainOptions{}.warmup_steps;
  if (args.run.steps <= warmup) {
    throw InputError("--steps " + std::to_string(args.run.steps) + ": the first " + std::to_string(warmup) +
                     " are left out of the measurement; give at least " + std::to_string(warmup + 1));
  }
  if (!args.plot.empty()) check_plot_path(args.plot);
  if (!args.html.empty()) check_html_report(args.html);
}

// Trains each (plan, batch), one progress line each; a run out of memory
// becomes a row marked so.
void measure(const ValidateArgs& args, std::vector<Row>& rows) {
  for (size_t i = 0; i < rows.size(); ++i) {
    Row& row = rows[i];
    workflow::TrainRun run = args.run;
    run.plan = row.plan;
    run.batch = row.batch;
    Progress progress("training " + std::to_string(i + 1) + "/" + std::to_string(rows.size()) + ": " + row.plan + ", batch " +
                      std::to_string(row.batch));
    workflow::TrainCallbacks callbacks;
    callbacks.on_step = [&](int step, int steps, double loss) { progress.update(step, steps, "loss " + fixed(loss, 4)); };
    try {
      const executor::TrainReport report = workflow::train_run(run, callbacks);
      row.measured_peak = static_cast<double>(report.peak_bytes);
      row.measured_rate = report.median_samples_per_s;
    } catch (const std::exception& e) {
      if (!profiler::is_out_of_memory(e)) throw;
      row.out_of_memory = true;
      progress.update(1, 1, "out of memory");
    }
  }
}

// The predicted curves of every plan, with the measured rows as points.
PredictionPanels measured_panels(const ValidateArgs& args, const workflow::Profiled& profiled, const std::vector<Row>& rows) {
  std::vector<std::pair<std::string, model::Plan>> plans;
  for (const auto& name : args.plans) plans.push_back({name, model::expand_plan_name(name, profiled.model.layout())});
  PredictionPanels panels = prediction_panels(profiled.model, profiled.target, plans, args.batches.back(), std::nullopt);
  for (const Row& row : rows) {
    if (row.out_of_memory) continue;
    const size_t i = std::find(args.plans.begin(), args.plans.end(), row.plan) - args.plans.begin();
    const double b = static_cast<double>(row.batch);
    panels.memory.series[i].points.push_back({b, row.measured_peak / panels.bytes_per_unit});
    panels.throughput.series[i].points.push_back({b, row.measured_rate});
  }
  return panels;
}

void plot(const ValidateArgs& args, const workflow::Profiled& profiled, const std::vector<Row>& rows) {
  const PredictionPanels panels = measured_panels(args, profiled, rows);
  write_plot(args.plot,
             profiled.model.network + " on " + profiled.model.machine.device_name + ": predicted (lines) and measured (points)",
             {panels.memory, panels.throughput});
}

// The page of --html: the step under the first two plans at the largest
// batch, every plan's predicted curves with the measured points, and the
// table of predicted beside measured.
void report(const ValidateArgs& args, const workflow::Profiled& profiled, const std::vector<Row>& rows) {
  const model::LayerModel& m = profiled.model;
  const int64_t batch = args.batches.back();
  nlohmann::json timelines = nlohmann::json::array();
  for (size_t i = 0; i < std::min<size_t>(2, args.plans.size()); ++i) {
    timelines.push_back(step_timeline(m, profiled.target, model::expand_plan_name(args.plans[i], m.layout()), batch));
  }
  const PredictionPanels panels = measured_panels(args, profiled, rows);
  nlohmann::json table = nlohmann::json::array();
  for (const Row& row : rows) {
    const bool ran = !row.out_of_memory;
    table.push_back({row.plan, std::to_string(row.batch), model::format_bytes(row.predicted.peak_bytes),
                     ran ? model::format_bytes(row.measured_peak) : "out of memory",
                     ran ? error_percent(row.predicted.peak_bytes, row.measured_peak) : "-",
                     per_second(row.predicted.samples_per_s), ran ? fixed(row.measured_rate, 1) : "-",
                     ran ? error_percent(row.predicted.samples_per_s, row.measured_rate) : "-"});
  }
  write_html_report(
      args.html,
      {{"title", "papaya validate: " + m.network + " on " + m.machine.device_name},
       {"subtitle", "profiled at batches " + joined(args.profile_batches) + ", predicted, then trained " +
                        std::to_string(args.run.steps) + " steps a row; the step below at batch " + std::to_string(batch) +
                        " as predicted"},
       {"timelines", timelines},
       {"curves", {{"memory", panel_json(panels.memory, batch)}, {"throughput", panel_json(panels.throughput, batch)}}},
       {"columns",
        {"plan", "batch", "peak predicted", "peak measured", "error", "samples/s predicted", "samples/s measured", "error"}},
       {"plans", table}});
}

struct Validation {
  std::string network, device, device_name;
  std::string profiled_precision;  // the model's
  ValidateArgs args;               // as checked: sorted, without repeats
  int warmup = 0;                  // steps left out of each row's measurement
  std::vector<Row> rows;
  Accuracy memory, throughput;
  size_t out_of_memory = 0;  // rows
  double seconds = 0;
};

void to_json(nlohmann::json& doc, const Validation& v) {
  nlohmann::json out_rows = nlohmann::json::array();
  for (const Row& row : v.rows) {
    nlohmann::json r = {{"plan", row.plan},
                        {"batch", row.batch},
                        {"out_of_memory", row.out_of_memory},
                        {"predicted_peak_bytes", row.predicted.peak_bytes},
                        {"predicted_samples_per_s", row.predicted.samples_per_s},
                        {"measured_peak_bytes", nullptr},
                        {"measured_samples_per_s", nullptr},
                        {"peak_error_pct", nullptr},
                        {"samples_per_s_error_pct", nullptr}};
    if (!row.out_of_memory) {
      r["measured_peak_bytes"] = row.measured_peak;
      r["measured_samples_per_s"] = row.measured_rate;
      r["peak_error_pct"] = 100 * error_fraction(row.predicted.peak_bytes, row.measured_peak);
      r["samples_per_s_error_pct"] = 100 * error_fraction(row.predicted.samples_per_s, row.measured_rate);
    }
    out_rows.push_back(r);
  }
  doc = {{"network", v.network},
         {"device", v.device},
         {"device_name", v.device_name},
         {"precision", v.args.run.precision},
         {"profile_batches", v.args.profile_batches},
         {"batches", v.args.batches},
         {"plans", v.args.plans},
         {"steps", v.args.run.steps},
         {"warmup_steps", v.warmup},
         {"rows", out_rows},
         {"memory", v.memory},
         {"throughput", v.throughput},
         {"out_of_memory_rows", v.out_of_memory},
         {"plot", v.args.plot},
         {"html", v.args.html},
         {"seconds", v.seconds}};
}

void print_text(std::ostream& out, const Validation& v) {
  out << "papaya validate: " << v.network << " (" << v.profiled_precision << ") on " << v.device_name << "; profiled at batches "
      << joined(v.args.profile_batches) << ", predicted, then trained " << v.args.run.steps << " steps per row (the first "
      << v.warmup << " left out)\n\n";
  Table table(
      {"plan", "batch", "peak predicted", "peak measured", "error", "samples/s predicted", "samples/s measured", "error"});
  for (const Row& row : v.rows) {
    const std::string peak = model::format_bytes(row.predicted.peak_bytes), rate = per_second(row.predicted.samples_per_s);
    if (row.out_of_memory) {
      table.add_row({row.plan, std::to_string(row.batch), peak, "out of memory", "-", rate, "-", "-"});
      continue;
    }
    table.add_row({row.plan, std::to_string(row.batch), peak, model::format_bytes(row.measured_peak),
                   error_percent(row.predicted.peak_bytes, row.measured_peak), rate, fixed(row.measured_rate, 1),
                   error_percent(row.predicted.samples_per_s, row.measured_rate)});
  }
  table.print(out);
  out << "\npeak memory: " << sentence(v.memory) << "\n"
      << "samples/s:   " << sentence(v.throughput) << "\n";
  if (v.out_of_memory) out << v.out_of_memory << " row(s) ran out of memory and are left out of both\n";
  if (!v.args.plot.empty()) out << "figure written to " << v.args.plot << "\n";
  if (!v.args.html.empty()) out << "report written to " << v.args.html << "\n";
  out << "took " << fixed(v.seconds, 0) << " s\n";
}

Validation compute(const ValidateArgs& given) {
  const auto start = std::chrono::steady_clock::now();
  Validation v;
  ValidateArgs& args = v.args;
  args = given;
  check(args);
  workflow::ProfileAndFitRequest request;
  request.network = *args.run.network_config;
  request.device = args.run.device;
  request.precision = args.run.precision;
  request.batches = args.profile_batches;
  request.shape_parts = args.profile_parts;
  ProgressReporter reporter;
  const workflow::Profiled profiled = workflow::profile_and_fit(request, reporter);
  const model::LayerModel& m = profiled.model;
  v.network = m.network;
  v.device = m.machine.device;
  v.device_name = m.machine.device_name;
  v.profiled_precision = m.precision;

  for (const auto& name : args.plans) {
    const model::Plan plan = model::expand_plan_name(name, m.layout());
    for (int64_t batch : args.batches) v.rows.push_back({name, batch, model::predict(m, profiled.target, plan, batch)});
  }
  measure(args, v.rows);
  if (!args.plot.empty()) plot(args, profiled, v.rows);
  if (!args.html.empty()) report(args, profiled, v.rows);

  std::vector<double> peak_predicted, peak_measured, rate_predicted, rate_measured;
  for (const Row& row : v.rows) {
    if (row.out_of_memory) {
      ++v.out_of_memory;
      continue;
    }
    peak_predicted.push_back(row.predicted.peak_bytes);
    peak_measured.push_back(row.measured_peak);
    rate_predicted.push_back(row.predicted.samples_per_s);
    rate_measured.push_back(row.measured_rate);
  }
  v.memory = accuracy(peak_predicted, peak_measured, memory_target_pct);
  v.throughput = accuracy(rate_predicted, rate_measured, throughput_target_pct);
  v.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  v.warmup = executor::TrainOptions{}.warmup_steps;  // check() made sure steps are more
  return v;
}

}  // namespace

void register_validate(CLI::App& app) {
  auto args = std::make_shared<ValidateArgs>();
  auto* cmd = app.add_subcommand(
      "validate",
      "Check the performance model here: profile at small batches and fit, predict each plan at larger batches, train each "
      "and compare (R², median and largest error of peak memory and samples/s).");
  add_network_choice_options(cmd, args->run.network, args->seq_len, args->network_options, /*models=*/true);
  cmd->add_option("--batches,-b", args->batches, "Batch sizes to predict and train at, comma-separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(positive(args->batches));
  cmd->add_option("--plans,-p", args->plans,
                  "Whole-network plans, comma-separated: keep, recompute-all or recompute-attention, quantize-{8,4,2}, "
                  "adaptive-N, invert, swap (CUDA), joined by '+'")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--profile-batches", args->profile_batches,
                  "Batch sizes to profile and fit the model at, comma-separated; default: 1,2,4 (2,4,8 for a TorchScript "
                  "network)")
      ->delimiter(',')
      ->check(positive(args->profile_batches));
  add_profile_parts_option(cmd, args->profile_parts);
  cmd->add_option("--device,-d", args->run.device, "cpu, cuda or cuda:N")->capture_default_str();
  add_precision_option(cmd, args->run.precision);
  cmd->add_option("--steps,-s", args->run.steps, "Training steps per (plan, batch), the first 2 left out")
      ->capture_default_str()
      ->check(positive(args->run.steps));
  cmd->add_option("--plot", args->plot, "Figure of predicted curves and measured points against the batch (.svg or .png)");
  cmd->add_option("--html", args->html,
                  "A self-contained HTML report: the step's memory layer by layer under the first two plans, the predicted "
                  "curves with the measured points, and predicted beside measured");
  const auto output = add_output_options(cmd);
  cmd->callback([args, output] { show(compute(*args), *output); });
}

}  // namespace papaya::cli
