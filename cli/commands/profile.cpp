// papaya profile: measure a network layer by layer at several batch sizes
// and write the profile that `papaya fit` reads.
#include <algorithm>
#include <iostream>

#include "cli/commands/commands.h"
#include "cli/commands/profile_comm.h"
#include "cli/options/network_choice.h"
#include "cli/options/network_option.h"
#include "cli/options/number_checks.h"
#include "cli/options/output_file.h"
#include "cli/report/progress.h"
#include "cli/report/report.h"
#include "cli/report/table.h"
#include "model/error.h"
#include "model/units.h"
#include "profiler/profiler.h"
#include "profiler/summary.h"

namespace papaya::cli {
namespace {

// What the command line sets of profiler::ProfileOptions (whose defaults it
// shows), and what it writes.
struct ProfileArgs {
  std::string network = default_network;
  std::optional<int> seq_len;
  NetworkOptions network_options;
  profiler::ProfileOptions options;
  std::string batches;  // "1,2,4,8"; "": the profiler's default
  std::string memory_limit;
  int probe_batch = 0;
  CLI::Option* probe_option = nullptr;  // given: probe_batch is the user's
  std::string out;
  bool comm = false;  // the link between ranks instead of a network
  int nproc = 2;
  double timeout_s = 300;
};

double ms(double seconds) { return seconds * 1e3; }

// The largest batch that fit: the one the per-layer table shows.
size_t largest_fitting(const model::Profile& p) {
  size_t best = 0;
  for (size_t i = 0; i < p.iterations.size(); ++i) {
    if (!p.iterations[i].oom) best = i;
  }
  return best;
}

void print_tables(std::ostream& out, const model::Profile& p) {
  const size_t shown = largest_fitting(p);
  const std::string at = " (b=" + std::to_string(p.batches[shown]) + ")";
  const bool probed = p.probe_batch > 0;
  const std::string alone = " (b=" + std::to_string(p.probe_batch) + ", probe)";
  std::vector<std::string> header = {"layer", "kind", "fwd ms" + at, "bwd ms" + at};
  if (probed) header.insert(header.end(), {"fwd ms" + alone, "bwd ms" + alone});
  header.push_back("saved/sample");
  Table layers(header);
  double saved_total = 0;
  for (const auto& l : p.layers) {
    const double saved = profiler::new_saved_bytes(l, 1);
    saved_total += saved;
    std::vector<std::string> row = {l.path, model::to_string(l.kind), fixed(ms(l.measured[shown].forward_s), 3),
                                    fixed(ms(l.measured[shown].backward_s), 3)};
    if (probed && l.probe) row.insert(row.end(), {fixed(ms(l.probe->forward_s), 3), fixed(ms(l.probe->backward_s), 3)});
    if (probed && !l.probe) row.insert(row.end(), {"-", "-"});
    row.push_back(model::format_bytes(saved));
    layers.add_row(row);
  }
  std::vector<std::string> total(header.size(), "");
  total.front() = "total";
  total.back() = model::format_bytes(saved_total);
  layers.add_row(total);
  layers.print(out);
  out << "saved/sample: bytes of the storages a layer is the first to save";
  if (probed)
    out << "; probe: each layer at batch " << p.probe_batch
        << ", run alone or within its block, a point the fit extrapolates toward (-: not probed, as it ran out of memory "
           "there or is called with arguments besides its tensors)";
  out << "\n\n";

  Table batches(
      {"batch", "iteration ms", "forward", "backward", "optimizer", "samples/s", "peak", "activations", "layers cover"});
  for (size_t i = 0; i < p.iterations.size(); ++i) {
    const auto& it = p.iterations[i];
    if (it.oom) {
      batches.add_row({std::to_string(it.batch), "out of memory"});
      continue;
    }
    batches.add_row({std::to_string(it.batch), fixed(ms(it.iteration_s), 2), fixed(ms(it.forward_s), 2),
                     fixed(ms(it.backward_s), 2), fixed(ms(it.optimizer_s), 2), fixed(it.batch / it.iteration_s, 1),
                     model::format_bytes(static_cast<double>(it.peak_bytes)),
                     model::format_bytes(static_cast<double>(it.forward_end_bytes - it.static_bytes)),
                     fixed(100 * profiler::layer_time_share(p, i), 0) + "%"});
  }
  batches.print(out);
  out << "activations: allocated at the end of forward - static (weights, gradients, AdamW state); "
         "layers cover: per-layer forward + backward time / iteration time\n";
}

struct ProfileRun {
  model::Profile profile;
  int warmup = 0, steps = 0, rounds = 0;  // per batch size, as run
  std::string out;                        // where the profile was written
};

void to_json(nlohmann::json& doc, const ProfileRun& run) {
  const model::Profile& p = run.profile;
  nlohmann::json batches = nlohmann::json::array();
  for (size_t i = 0; i < p.iterations.size(); ++i) {
    const auto& it = p.iterations[i];
    nlohmann::json row = {{"batch", it.batch}, {"oom", it.oom}};
    if (!it.oom) {
      row.update({{"iteration_s", it.iteration_s},
                  {"forward_s", it.forward_s},
                  {"backward_s", it.backward_s},
                  {"optimizer_s", it.optimizer_s},
                  {"samples_per_s", it.batch / it.iteration_s},
                  {"peak_bytes", it.peak_bytes},
                  {"static_bytes", it.static_bytes},
                  {"activation_bytes", it.forward_end_bytes - it.static_bytes},
                  {"saved_bytes", profiler::saved_bytes(p, it.batch)},
                  {"layer_time_share", profiler::layer_time_share(p, i)}});
    }
    batches.push_back(row);
  }
  doc = {{"network", p.network},
         {"device", p.machine.device},
         {"device_name", p.machine.device_name},
         {"precision", p.precision},
         {"timing", p.machine.timing},
         {"layers", p.layers.size()},
         {"segments", p.segments.size()},
         {"batches", batches},
         {"probe_batch", p.probe_batch},
         {"probed_layers", std::count_if(p.layers.begin(), p.layers.end(), [](const auto& l) { return l.probe.has_value(); })},
         {"h2d_bytes_per_s", p.h2d_bytes_per_s},
         {"d2h_bytes_per_s", p.d2h_bytes_per_s},
         {"out", run.out}};
}

void print_text(std::ostream& out, const ProfileRun& run) {
  const model::Profile& p = run.profile;
  out << "papaya profile: " << p.network << " on " << p.machine.device_name << ", " << p.precision << ", " << run.warmup
      << " warm-up + " << run.steps << " measured steps per batch in " << run.rounds << " rounds, layers timed by "
      << p.machine.timing << "\n\n";
  print_tables(out, p);
  out << "profile written to " << run.out << "\n";
}

ProfileRun compute(const ProfileArgs& args) {
  check_writable(args.out);
  profiler::ProfileOptions options = args.options;
  options.network = load_network(args.network, args.seq_len, args.network_options);
  if (options.precision.empty()) options.precision = options.network.precision;
  if (args.batches.empty()) {  // the profiler's, times the smallest batch the network runs at
    for (int& b : options.batches) b *= options.network.smallest_batch();
  } else {
    options.batches = model::parse_int_list(args.batches, "--batch");
  }
  if (!args.memory_limit.empty()) options.memory_limit = model::parse_size(args.memory_limit, "--memory-limit");
  if (args.probe_option->count() > 0) options.probe_batch = args.probe_batch;
  options.on_warning = [](const std::string& message) { std::cerr << "papaya: warning: " << message << "\n"; };
  ProfileRun run;
  {
    Progress progress("profiling");
    options.on_progress = [&](int done, int total, const std::string& note) { progress.update(done, total, note); };
    run.profile = profiler::profile_network(options);
  }
  model::write_profile(args.out, run.profile);
  run.warmup = options.warmup;
  run.steps = options.steps;
  run.rounds = std::min(options.rounds, options.steps);
  run.out = args.out;
  return run;
}

}  // namespace

void register_profile(CLI::App& app) {
  auto args = std::make_shared<ProfileArgs>();
  auto* cmd = app.add_subcommand(
      "profile", "Measure a network layer by layer (time, memory, saved tensors) at several batch sizes; write a profile.");
  profiler::ProfileOptions& o = args->options;
  o.precision.clear();  // the network's unless --precision says
  add_network_choice_options(cmd, args->network, args->seq_len, args->network_options, /*models=*/true);
  std::string defaults;
  for (int b : o.batches) defaults += (defaults.empty() ? "" : ",") + std::to_string(b);
  cmd->add_option("--batch,-b", args->batches,
                  "Batch sizes, comma-separated; default: " + defaults + " (twice each for a TorchScript network)");
  cmd->add_option("--device,-d", o.device, "cpu, cuda or cuda:N")->capture_default_str();
  cmd->add_option("--steps,-s", o.steps, "Measured training steps per batch size")
      ->capture_default_str()
      ->check(positive(o.steps));
  cmd->add_option("--warmup", o.warmup, "Steps per batch size before measuring")
      ->capture_default_str()
      ->check(non_negative(o.warmup));
  cmd->add_option("--rounds", o.rounds,
                  "Measure the batch sizes in turn this many times, the steps split between rounds; every time is the median "
                  "over all steps")
      ->capture_default_str()
      ->check(positive(o.rounds));
  add_precision_option(cmd, o.precision);
  cmd->add_option("--seed", o.seed, "Seed of weights and data")->capture_default_str()->check(non_negative(o.seed));
  cmd->add_option("--memory-limit", args->memory_limit,
                  "Count a batch size as out of memory once allocated bytes pass SIZE (e.g. 64MiB): a smaller device");
  add_profile_blocks_option(cmd, o.profile_blocks);
  args->probe_option =
      cmd->add_option("--probe-batch", args->probe_batch,
                      "Also time each layer at this batch, alone or within its block (one block fits where the "
                      "whole network may not): a point its time curve is fitted to; where time grows with the batch this can "
                      "double the profile's time or more [default: 16 x the largest --batch; 0: none]")
          ->check(non_negative(args->probe_batch));
  cmd->add_option("--out,-o", args->out,
                  "Profile file to write (JSON); with --comm, optional: the link file that --link of predict, limits, plan "
                  "and recommend takes");
  cmd->add_flag("--comm", args->comm,
                "Instead of a network: time allreduces of 4 KiB to 64 MiB between --nproc ranks on this host (Gloo, "
                "loopback) and fit the link's latency and bandwidth");
  cmd->add_option("--nproc", args->nproc, "With --comm: ranks to start here")
      ->capture_default_str()
      ->check(within(args->nproc, 2, 64));
  cmd->add_option("--timeout", args->timeout_s, "With --comm: seconds a rank waits for the others")
      ->capture_default_str()
      ->check(positive(args->timeout_s));
  const auto output = add_output_options(cmd, "A JSON summary instead of tables (the profile itself goes to --out)");
  cmd->callback([args, output] {
    if (args->comm) return profile_comm(args->nproc, args->timeout_s, args->out, *output);
    if (args->out.empty()) throw InputError("profile: --out FILE, where the profile goes, is needed");
    show(compute(*args), *output);
  });
}

}  // namespace papaya::cli
