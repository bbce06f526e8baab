// papaya train: train a network of the zoo and report throughput, peak
// memory and loss.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands/commands.h"
#include "cli/options/network_choice.h"
#include "cli/options/network_option.h"
#include "cli/options/number_checks.h"
#include "cli/process/stop_signal.h"
#include "cli/report/progress.h"
#include "cli/report/report.h"
#include "cli/report/table.h"
#include "executor/trainer.h"
#include "model/error.h"
#include "model/units.h"
#include "workflow/plan.h"
#include "workflow/profile_and_fit.h"
#include "workflow/training/launch.h"
#include "workflow/training/layout_file.h"
#include "workflow/training/train_run.h"

namespace papaya::cli {
namespace {

using workflow::TrainCallbacks;
using workflow::TrainRun;
using workflow::TrainSetup;

struct TrainArgs {
  TrainRun run;  // plan "auto": replaced by the planned one
  std::optional<int> seq_len;
  NetworkOptions network_options;
  std::string budget;        // --plan auto
  bool batch_given = false;  // --plan auto: plan at --batch, else choose it
  int nproc = 1;             // data-parallel ranks to start here
  std::string sp = "on";     // --sp
  std::string layout_path;   // --layout
  std::optional<workflow::LayoutFile> layout_file;
};

// What each rank of a --zero job holds, for the ranks' headline.
std::string zero_text(int zero) {
  switch (zero) {
    case 1: return "; ZeRO-1: each rank holds and steps its shard of AdamW's state";
    case 2: return "; ZeRO-2: each rank holds and steps its shard of the gradients and AdamW's state";
    case 3:
      return "; ZeRO-3: each rank holds its shard of the weights, gradients and AdamW's state, and gathers each layer's "
             "weights as it runs";
    default: return "";
  }
}

// --plan auto: profile, fit and plan within --budget before training.
struct AutoPlan {
  planner::PlanResult result;
  double budget_bytes = 0;
};

// `run` with its network loaded, unless it goes on with a state's, and
// checked (workflow::prepare_train_run).
void prepare(TrainRun& run, const TrainArgs& args) {
  if (!run.resume.empty() && run.plan == "auto")
    throw InputError("--resume goes on with the state's plan; leave out --plan auto");
  if (run.resume.empty() || run.given.count("network")) {
    run.network_config = load_network(run.network, args.seq_len, args.network_options);
  }
  if (args.layout_file) workflow::check_made_for(*args.layout_file, *run.network_config, args.layout_path);
  workflow::prepare_train_run(run);
}

// `run` is args.run prepared (prepare).
std::optional<AutoPlan> plan_if_auto(const TrainArgs& args, const TrainRun& run) {
  if (args.run.plan != "auto") {
    if (!args.budget.empty()) throw InputError("--budget applies to --plan auto only");
    return std::nullopt;
  }
  if (args.budget.empty()) throw InputError("--plan auto needs --budget SIZE (the memory the step may use)");
  if (!args.run.data.empty()) throw InputError("--plan auto plans on synthetic data; leave out --data");
  AutoPlan out;
  out.budget_bytes = static_cast<double>(model::parse_size(args.budget, "--budget"));
  workflow::ProfileAndFitRequest profile;
  profile.network = *run.network_config;
  profile.device = run.device;
  profile.precision = run.precision;
  ProgressReporter reporter;
  const workflow::Profiled profiled = workflow::profile_and_fit(profile, reporter);
  planner::PlanRequest request;
  request.budget_bytes = out.budget_bytes;
  if (args.batch_given) request.batch = args.run.batch;
  out.result = workflow::plan(profiled.model, profiled.target, request, {0}, reporter).result;
  return out;
}

struct Trained {
  TrainRun run;  // as trained (--plan auto: the planned batch and plan)
  TrainSetup setup;
  executor::TrainReport report;
  std::optional<AutoPlan> auto_plan;
  int stopped_by = 0;  // the signal that stopped training early, if one did
};

// A job's global batch: its ranks' batches, or a pipeline's micro-batches.
int64_t global_batch(const Trained& t) {
  return (t.run.layout.pipeline > 1 ? t.run.global_batch() : t.setup.batch) * t.run.data_ranks();
}

// A job's pace: its global batch over its slowest rank's median step.
double global_samples_per_s(const Trained& t) {
  double slowest = 0;
  for (const auto& r : t.report.ranks) slowest = std::max(slowest, r.median_step_seconds);
  return slowest > 0 ? static_cast<double>(global_batch(t)) / slowest : 0;
}

nlohmann::json ranks_json(const Trained& t) {
  nlohmann::json ranks = nlohmann::json::array();
  for (size_t r = 0; r < t.report.ranks.size(); ++r) {
    const auto& f = t.report.ranks[r];
    ranks.push_back({{"rank", r},
                     {"peak_bytes", f.peak_bytes},
                     {"static_bytes", f.static_bytes},
                     {"exchange_seconds", f.exchange_seconds},
                     {"median_step_seconds", f.median_step_seconds}});
  }
  return ranks;
}

void to_json(nlohmann::json& out, const Trained& t) {
  const TrainSetup& setup = t.setup;
  const executor::TrainReport& report = t.report;
  out = {{"network", setup.network},
         {"parameters", setup.parameters},
         {"trainable_parameters", setup.trainable_parameters},
         {"device", setup.device},
         {"device_name", setup.device_name},
         {"precision", setup.precision},
         {"plan", setup.plan},
         {"data", setup.data},
         {"batch", setup.batch},
         {"steps", t.run.steps},
         {"first_step", setup.first_step},
         {"steps_done", report.steps_done},
         {"warmup_steps", report.warmup_steps},
         {"seed", setup.seed},
         {"samples_per_s", report.samples_per_s},
         {"step_seconds", report.step_seconds},
         {"median_samples_per_s", report.median_samples_per_s},
         {"median_step_seconds", report.median_step_seconds},
         {"peak_bytes", report.peak_bytes},
         {"forward_backward_peak_bytes", report.forward_backward_peak_bytes},
         {"forward_end_bytes", report.forward_end_bytes},
         {"peak_reserved_bytes", report.peak_reserved_bytes},
         {"static_bytes", report.static_bytes},
         {"activation_bytes", report.forward_backward_peak_bytes - report.static_bytes},
         {"stored_bytes", report.stored_bytes},
         {"initial_loss", report.losses.front()},
         {"final_loss", report.losses.back()},
         {"losses", report.losses}};
  if (!report.ranks.empty()) {
    out["world_size"] = report.ranks.size();
    out["zero"] = t.run.layout.zero_stage;
    out["global_batch"] = global_batch(t);
    if (t.run.layout.pipeline > 1) {
      out["pipeline"] = t.run.layout.pipeline;
      out["micro_batches"] = t.run.layout.micro_batches;
    }
    if (t.run.layout.tensor > 1) {
      out["tensor"] = t.run.layout.tensor;
      out["sequence_parallel"] = t.run.layout.sequence;
    }
    out["global_samples_per_s"] = global_samples_per_s(t);
    out["ranks"] = ranks_json(t);
  }
  if (report.loss_scale) {
    out["loss_scale"] = *report.loss_scale;
    out["skipped_steps"] = report.skipped_steps;
  }
  if (!t.run.save.empty()) out["saved"] = t.run.save;
  if (!t.run.save_model.empty()) out["saved_model"] = t.run.save_model;
  if (t.stopped_by) out["stopped_by"] = signal_name(t.stopped_by);
  if (t.auto_plan) {
    out["budget_bytes"] = t.auto_plan->budget_bytes;
    out["predicted"] = {{"peak_bytes", t.auto_plan->result.estimate.peak_bytes},
                        {"samples_per_s", t.auto_plan->result.estimate.samples_per_s},
                        {"per_layer", t.auto_plan->result.per_layer}};
  }
}

// The headline is out before training (headline()); this is what follows it.
void print_text(std::ostream& out, const Trained& t) {
  const TrainSetup& setup = t.setup;
  const executor::TrainReport& report = t.report;
  const int64_t activation = report.forward_backward_peak_bytes - report.static_bytes;
  Table table({"measure", "value", "note"});
  const std::string over =
      "steps " + std::to_string(setup.first_step + report.warmup_steps + 1) + "-" + std::to_string(report.steps_done);
  table.add_row({"samples/s", per_second(report.samples_per_s), over});
  table.add_row({"step time", fixed(report.step_seconds * 1e3, 1) + " ms", over});
  table.add_row({"median step", fixed(report.median_step_seconds * 1e3, 1) + " ms",
                 "the steady pace: " + per_second(report.median_samples_per_s) + " samples/s"});
  table.add_row({"peak memory", model::format_bytes(static_cast<double>(report.peak_bytes)), "allocator peak, " + over});
  table.add_row(
      {"static memory", model::format_bytes(static_cast<double>(report.static_bytes)), "weights + gradients + AdamW state"});
  table.add_row(
      {"activation peak", model::format_bytes(static_cast<double>(activation)), "peak over forward and backward - static"});
  for (const auto& [strategy, bytes] : report.stored_bytes) {
    table.add_row({"stored: " + strategy, model::format_bytes(static_cast<double>(bytes)), "saved for backward, last step"});
  }
  table.add_row({"loss", fixed(report.losses.front(), 4) + " -> " + fixed(report.losses.back(), 4), "first -> last step"});
  if (report.loss_scale) {
    table.add_row({"loss scale", fixed(*report.loss_scale, 0),
                   std::to_string(report.skipped_steps) + " step(s) skipped for overflowing fp16 gradients"});
  }
  table.print(out);
  if (!report.ranks.empty()) {
    const std::string ranks_are =
        t.run.layout.pipeline > 1
            ? " ranks in " + std::to_string(t.run.layout.pipeline) + " pipeline stages (1F1B, " +
                  std::to_string(t.run.layout.micro_batches) + " micro-batches of " + std::to_string(setup.batch) + ")" +
                  (t.run.layout.tensor > 1 ? ", each a tensor-parallel group" : "")
        : t.run.layout.tensor > 1
            ? std::string(" tensor-parallel ranks (Megatron's column- and row-parallel split") +
                  (t.run.layout.sequence ? ", the tokens between them split)" : ")") +
                  (t.run.data_ranks() > 1 ? " in " + std::to_string(t.run.data_ranks()) + " data-parallel groups of " +
                                                std::to_string(t.run.layout.tensor)
                                          : "")
            : " data-parallel ranks";
    out << "\n"
        << report.ranks.size() << ranks_are << ", global batch " << global_batch(t) << ": " << per_second(global_samples_per_s(t))
        << " samples/s (the slowest rank's median step)" << zero_text(t.run.layout.zero_stage) << "\n";
    Table ranks({"rank", "peak memory", "static memory", "exchange", "median step"});
    for (size_t r = 0; r < report.ranks.size(); ++r) {
      const auto& f = report.ranks[r];
      ranks.add_row({std::to_string(r), model::format_bytes(static_cast<double>(f.peak_bytes)),
                     model::format_bytes(static_cast<double>(f.static_bytes)), fixed(f.exchange_seconds * 1e3, 2) + " ms",
                     fixed(f.median_step_seconds * 1e3, 1) + " ms"});
    }
    ranks.print(out);
  }
  if (t.auto_plan) {
    const model::Estimate& e = t.auto_plan->result.estimate;
    out << "\nplan auto: " << (t.auto_plan->result.per_layer ? "a per-layer plan" : "the combination " + setup.plan)
        << " at batch " << t.run.batch << " within " << model::format_bytes(t.auto_plan->budget_bytes) << "\n";
    Table check({"", "predicted", "measured", "error"});
    check.add_row({"peak memory", model::format_bytes(e.peak_bytes), model::format_bytes(static_cast<double>(report.peak_bytes)),
                   error_percent(e.peak_bytes, static_cast<double>(report.peak_bytes))});
    check.add_row({"samples/s (median step)", per_second(e.samples_per_s), per_second(report.median_samples_per_s),
                   error_percent(e.samples_per_s, report.median_samples_per_s)});
    check.print(out);
    out << (report.peak_bytes <= t.auto_plan->budget_bytes ? "the measured peak is within the budget\n"
                                                           : "papaya: warning: the measured peak is over the budget\n");
  }
  if (!t.run.save.empty() && !t.stopped_by)
    out << "training state saved to " << t.run.save << " (step " << report.steps_done << ")\n";
  if (!t.run.save_model.empty())
    out << "trained network saved to " << t.run.save_model << " (step " << report.steps_done << ")\n";
}

std::string headline(const TrainSetup& setup, const TrainRun& run) {
  const std::string trainable = setup.trainable_parameters == setup.parameters
                                    ? ""
                                    : ", " + model::format_si(static_cast<double>(setup.trainable_parameters)) + " trainable";
  return "papaya train: " + setup.network + " (" + setup.family + ", " + model::format_si(static_cast<double>(setup.parameters)) +
         " parameters" + trainable + ") on " + setup.device_name + ", " + setup.precision + ", batch " +
         std::to_string(setup.batch) + (run.world ? " per rank x " + std::to_string(run.world->size) + " ranks" : "") + ", " +
         std::to_string(run.steps) + " steps" +
         (setup.first_step > 0 ? " (from step " + std::to_string(setup.first_step) + ", " + run.resume + ")" : "") + ", plan " +
         setup.plan + "\n" + "data: " + setup.data + "\n";
}

Trained compute(const TrainArgs& args, const Output& output, bool speaks) {
  Trained t;
  t.run = args.run;
  t.run.record_stored_bytes = true;
  prepare(t.run, args);  // before --plan auto profiles
  t.auto_plan = plan_if_auto(args, t.run);
  if (t.auto_plan) {
    t.run.batch = t.auto_plan->result.batch;
    t.run.planned = t.auto_plan->result.plan;
  }
  if (speaks && !args.layout_file) {
    const int planned = workflow::gpus_planned_for(t.run.plan), ranks = t.run.world ? t.run.world->size : 1;
    if (planned > 1 && planned != ranks) {
      std::fprintf(stderr,
                   "papaya: note: %s was planned for %d data-parallel GPUs, this run has %d: train --layout %s runs it on them\n",
                   t.run.plan.c_str(), planned, ranks, t.run.plan.c_str());
    }
  }
  TrainCallbacks callbacks;
  callbacks.on_start = [&](const TrainSetup& built) {
    t.setup = built;
    if (speaks) output.headline(headline(built, t.run));
  };
  std::optional<Progress> progress;
  if (speaks) progress.emplace("training");
  callbacks.on_step = [&](int step, int steps, double loss) {
    if (progress) progress->update(step, steps, "loss " + fixed(loss, 4));
  };
  const StopSignal stop_signal;
  callbacks.stop_requested = [&stop_signal] { return stop_signal.received() != 0; };
  t.report = workflow::train_run(t.run, callbacks);
  t.stopped_by = t.report.steps_done < t.run.steps ? stop_signal.received() : 0;
  return t;
}

// After a signal stopped training (its report printed): say where it stopped
// and how to go on, and exit as a signal would.
void stop_if_stopped(const Trained& t) {
  if (!t.stopped_by) return;
  const std::string where =
      signal_name(t.stopped_by) + " after step " + std::to_string(t.report.steps_done) + " of " + std::to_string(t.run.steps);
  if (t.run.save.empty()) throw Stopped(t.stopped_by, "training stopped by " + where + " (not saved: no --save FILE)");
  throw Stopped(t.stopped_by, "training stopped by " + where + "; state saved to " + t.run.save +
                                  ": go on with papaya train --resume " + t.run.save + " --steps " + std::to_string(t.run.steps));
}

// --layout FILE: the options its layout, step and network stand for, as
// --emit papaya would print them; given beside it they are refused.
void lay_out_from_file(TrainArgs& args, const CLI::App& cmd) {
  if (!args.run.resume.empty()) throw InputError("--layout with --resume: a resumed run is laid out as it was saved");
  const workflow::LayoutFile file = workflow::read_layout_file(args.layout_path);
  std::vector<std::string> given_by_file = {"--nproc", "--tp", "--sp", "--pp", "--micro-batches", "--zero", "--batch", "--plan"};
  if (!file.precision.empty()) given_by_file.push_back("--precision");
  for (const auto& flag : given_by_file) {
    if (cmd.get_option(flag)->count() > 0) throw InputError("--layout " + args.layout_path + " gives " + flag + ": leave it out");
  }
  args.run.layout = file.layout;
  if (file.layout.pipeline == 1) args.run.layout.micro_batches = 0;  // one a step, as prepare_train_run sets
  args.nproc = file.layout.gpus();
  args.sp = file.layout.sequence ? "on" : "off";
  args.run.batch = file.layout.micro_batch;
  args.batch_given = true;
  args.run.plan = file.plan;
  if (!file.precision.empty()) args.run.precision = file.precision;
  if (!file.network.empty() && cmd.get_option("--network")->count() == 0) args.run.network = file.network;
  args.layout_file = file;
}

}  // namespace

void register_train(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  auto* cmd =
      app.add_subcommand("train", "Train a network (synthetic data, or a data file) and report samples/s, peak memory and loss.");
  add_network_choice_options(cmd, args->run.network, args->seq_len, args->network_options, /*models=*/false);
  auto* batch = cmd->add_option("--batch,-b", args->run.batch, "Samples per step (with --plan auto: default, the planned batch)")
                    ->capture_default_str()
                    ->check(positive(args->run.batch));
  cmd->add_option("--steps,-s", args->run.steps, "Training steps")->capture_default_str()->check(positive(args->run.steps));
  cmd->add_option("--seed", args->run.seed, "Seed of weights and data")
      ->capture_default_str()
      ->check(non_negative(args->run.seed));
  cmd->add_option("--device,-d", args->run.device, "cpu, cuda or cuda:N")->capture_default_str();
  add_precision_option(cmd, args->run.precision);
  cmd->add_option("--data", args->run.data,
                  "Data file: a text to train a gpt network on as a character-level language model, or for a TorchScript "
                  "network the batches torch.save wrote (a list of tuples in the forward's order, the loss's target last "
                  "if any), read in order and cycled");
  cmd->add_option("--lr", args->run.lr, "AdamW learning rate")->capture_default_str()->check(positive(args->run.lr));
  cmd->add_option(
         "--plan", args->run.plan,
         "Memory optimizations: a plan file, or a name: keep, recompute-all or recompute-attention (each block's attention "
         "core alone), quantize-{8,4,2}, adaptive-N, invert, swap, joined by '+' (e.g. quantize-2+invert); or auto: profile, fit "
         "and plan within --budget "
         "first")
      ->capture_default_str();
  cmd->add_option("--budget", args->budget, "With --plan auto: the memory the step may use (e.g. 24GiB, 12MiB)");
  cmd->add_option("--adaptive-every", args->run.adaptive_every, "Steps between sensitivity estimates of adaptive-N tensors")
      ->capture_default_str()
      ->check(positive(args->run.adaptive_every));
  cmd->add_option("--save", args->run.save,
                  "Write the training state (weights, optimizer, data position, random generators, plan, network config) "
                  "to FILE at the end, every --save-every steps, and when SIGINT or SIGTERM stops training");
  cmd->add_option("--save-model", args->run.save_model,
                  "For a TorchScript network: write it back trained to FILE, a TorchScript archive torch.jit.load loads "
                  "(its code as given, the trained parameters and buffers), when --save would write the state");
  cmd->add_option("--save-every", args->run.save_every, "With --save or --save-model: also every N steps")
      ->check(positive(args->run.save_every));
  cmd->add_option("--resume", args->run.resume,
                  "Go on from a training state (--save) up to --steps in all, bit for bit as if never stopped; the network, "
                  "plan and options are the state's")
      ->check(CLI::ExistingFile);
  cmd->add_option("--nproc", args->nproc,
                  "Train as N data-parallel ranks on this host over Gloo (c10d): --batch per rank, the same samples as one "
                  "process at N x --batch; under torchrun's RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, this process is one "
                  "rank of such a job")
      ->capture_default_str()
      ->check(positive(args->nproc));
  cmd->add_option("--zero", args->run.layout.zero_stage,
                  "With --nproc: 1 shards AdamW's state across the ranks (ZeRO-1: each rank steps its shard, then the "
                  "parameters are gathered); 2 the gradients too (each reduced to the rank owning it); 3 the weights too "
                  "(each layer's gathered as it runs, forward and backward); 0 keeps all whole on every rank")
      ->capture_default_str()
      ->check(within(args->run.layout.zero_stage, 0, 3));
  cmd->add_option("--pp", args->run.layout.pipeline,
                  "With --nproc N: the N ranks are pipeline stages of a transformer's blocks (1F1B) instead of data-parallel "
                  "ranks; --batch is a micro-batch")
      ->capture_default_str()
      ->check(positive(args->run.layout.pipeline));
  cmd->add_option("--tp", args->run.layout.tensor,
                  "With --nproc N: groups of T adjacent ranks are tensor-parallel (each holding its share of every projection's "
                  "heads or width and of the vocabulary, all taking the same --batch), the N/T groups data-parallel ranks "
                  "(--zero as without); with --pp P: --nproc T x P, each stage's T ranks a group")
      ->capture_default_str()
      ->check(positive(args->run.layout.tensor));
  cmd->add_option("--sp", args->sp,
                  "With --tp: sequence parallelism, on or off: the residual stream and the norms between the projections "
                  "hold each rank's share of the tokens (Megatron-LM's --sequence-parallel)")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}));
  cmd->add_option("--micro-batches", args->run.layout.micro_batches,
                  "With --pp: micro-batches a step, the global batch that many times --batch (default: 2 a stage)")
      ->check(positive(args->run.layout.micro_batches));
  cmd->add_option("--layout", args->layout_path,
                  "Train as the layout search chose: FILE is plan's or recommend's --json with --gpus (its best layout, "
                  "plan and precision), or a plan file made for --gpus N (its GPUs, ZeRO stage and batch); the network "
                  "is the one it was made for unless --network names it")
      ->check(CLI::ExistingFile);
  cmd->add_option("--timeout", args->run.timeout_s,
                  "With --nproc: seconds a rank waits for the others (to join, and in each exchange) before the job fails")
      ->capture_default_str()
      ->check(positive(args->run.timeout_s));
  const auto output = add_output_options(cmd);
  cmd->callback([args, batch, cmd, output] {
    args->batch_given = batch->count() > 0;
    // The settings a resumed state's run must have as given.
    for (const auto& [flag, setting] :
         std::initializer_list<std::pair<const char*, const char*>>{{"--network", "network"},
                                                                    {"--seq-len", "network"},
                                                                    {"--plan", "plan"},
                                                                    {"--precision", "precision"},
                                                                    {"--batch", "batch"},
                                                                    {"--seed", "seed"},
                                                                    {"--lr", "lr"},
                                                                    {"--data", "data"},
                                                                    {"--adaptive-every", "adaptive_every"}}) {
      if (cmd->get_option(flag)->count() > 0) args->run.given.insert(setting);
    }
    if (!args->layout_path.empty()) lay_out_from_file(*args, *cmd);
    if (args->run.save_every > 0 && args->run.save.empty() && args->run.save_model.empty()) {
      throw InputError("--save-every needs --save FILE or --save-model FILE");
    }
    args->run.world = executor::world_from_environment();
    // The ranks are t x d x p: tensor-parallel groups, data-parallel ranks, pipeline stages.
    const int ranks = args->run.world ? args->run.world->size : args->nproc;
    const int grid = args->run.layout.pipeline * args->run.layout.tensor;
    if (args->run.layout.micro_batches > 0 && args->run.layout.pipeline == 1) throw InputError("--micro-batches goes with --pp");
    if (grid > 1 && (ranks < grid || ranks % grid != 0)) {
      const std::string layers = args->run.layout.pipeline > 1 && args->run.layout.tensor > 1
                                     ? "--pp " + std::to_string(args->run.layout.pipeline) + " stages of --tp " +
                                           std::to_string(args->run.layout.tensor) + " ranks"
                                 : args->run.layout.pipeline > 1
                                     ? "--pp " + std::to_string(args->run.layout.pipeline) + " stages, one rank each,"
                                     : "--tp " + std::to_string(args->run.layout.tensor) + " ranks";
      throw InputError(layers + " hold the layers of one data-parallel rank: give --nproc " + std::to_string(grid) +
                       " or a multiple of it");
    }
    if (args->run.layout.zero_stage > 0 && grid > 1 && ranks == grid) {
      throw InputError("--zero " + std::to_string(args->run.layout.zero_stage) +
                       " shards the static state across data-parallel ranks; --nproc " + std::to_string(ranks) +
                       " makes one data-parallel rank of " +
                       (args->run.layout.pipeline > 1 ? "--pp " + std::to_string(args->run.layout.pipeline) : "") +
                       (args->run.layout.pipeline > 1 && args->run.layout.tensor > 1 ? " x " : "") +
                       (args->run.layout.tensor > 1 ? "--tp " + std::to_string(args->run.layout.tensor) : "") +
                       ": give --nproc a larger multiple of " + std::to_string(grid));
    }
    args->run.layout.data = ranks / grid;
    args->run.layout.sequence = args->sp == "on" && args->run.layout.tensor > 1;
    if (cmd->get_option("--sp")->count() > 0 && args->run.layout.tensor == 1) throw InputError("--sp goes with --tp");
    if (args->nproc > 1 && args->run.plan == "auto") {
      throw InputError(
          "--nproc with --plan auto: plan first (papaya recommend --gpus N --link LINK), then train the ranks with the plan "
          "file");
    }
    if (!args->run.world && args->nproc > 1) {
      TrainRun checked = args->run;
      prepare(checked, *args);  // bad input fails once, before any rank starts
      workflow::check_rank_devices(checked, args->nproc);
      return workflow::launch_ranks(args->nproc);
    }
    if (args->run.world && args->nproc > 1 && args->run.world->size != args->nproc) {
      const std::string asked = args->layout_file
                                    ? "--layout " + args->layout_path + " lays out " + std::to_string(args->nproc) + " ranks"
                                    : "--nproc " + std::to_string(args->nproc);
      throw InputError(asked + " in a job of WORLD_SIZE=" + std::to_string(args->run.world->size));
    }
    if (args->run.layout.zero_stage > 0 && !args->run.world) {
      throw InputError("--zero " + std::to_string(args->run.layout.zero_stage) +
                       " shards the static state across data-parallel ranks: give --nproc N");
    }
    const bool speaks = !args->run.world || args->run.world->rank == 0;  // rank 0 speaks for the job
    const Trained trained = compute(*args, *output, speaks);
    if (speaks) show(trained, *output);
    stop_if_stopped(trained);
  });
}

}  // namespace papaya::cli
