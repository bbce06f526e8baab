// papaya limits MODEL --hardware A,B,C: the largest batch of every
// whole-network plan on each catalog entry, under a memory budget. With
// --network instead of a model, the network is profiled here first, quickly
// and in part where it is large: 2 of its blocks where it would not fit this
// machine, and a long sequence modelled from three short ones. Given a
// global model (fit --measurements --out), each measured series' largest batch.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <future>
#include <thread>
#include <utility>

#include "cli/commands/commands.h"
#include "cli/options/network_choice.h"
#include "cli/options/network_option.h"
#include "cli/options/number_checks.h"
#include "cli/options/parallel_options.h"
#include "cli/report/data_parallel_text.h"
#include "cli/report/global_prediction.h"
#include "cli/report/html_report.h"
#include "cli/report/lanes_progress.h"
#include "cli/report/layout_report.h"
#include "cli/report/progress.h"
#include "cli/report/report.h"
#include "cli/report/table.h"
#include "executor/device.h"
#include "model/alike_experts.h"
#include "model/catalog/hardware.h"
#include "model/catalog/network_config.h"
#include "model/catalog/parameter_count.h"
#include "model/error.h"
#include "model/fit/global_model.h"
#include "model/fit/global_predict.h"
#include "model/layout_pricing/layout_search.h"
#include "model/plan_space/predict.h"
#include "model/units.h"
#include "workflow/layout_plan.h"
#include "workflow/parallel_request.h"
#include "workflow/profile_and_fit.h"

namespace papaya::cli {
namespace {

struct LimitsArgs {
  std::string model;
  std::string network;  // instead of a model: profile it here
  std::optional<int> seq_len;
  NetworkOptions network_options;
  int profile_blocks = 0;
  int profile_parts = 0;
  std::string precision;  // "": the network's
  std::string device;     // empty: cuda where there is one, else cpu
  std::string hardware;
  std::string budget;
  ParallelOptions parallel;
  std::optional<double> tokens;     // --tokens: the time to train on them
  std::vector<std::string> prices;  // --price NAME=USD: a GPU-hour's price
  std::string html;                 // --html: the layouts' page
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
  double static_bytes = 0;            // weights, gradients and optimizer state
  double static_bytes_per_gpu = 0;    // with --gpus: of one GPU, by the ZeRO stage
  std::optional<int64_t> parameters;  // known from --network
  std::vector<model::Target> targets;
  std::vector<double> budgets;             // one per target
  std::vector<std::string> strategies;     // the rows
  std::vector<std::vector<Limit>> limits;  // [strategy][target]
  // Where no strategy fits one GPU of a target: the fewest GPUs a layout of
  // them fits, and where that layout offloads the optimizer, the fewest
  // without; or why none does. One a target (nullopt where one GPU does).
  struct Fewest {
    std::optional<workflow::LayoutPlanned> planned, on_device;
    std::string why_none;
  };
  std::vector<std::optional<Fewest>> fewest;
  // Where one GPU of no target fits the network trained whole (--network
  // given, no fine-tuning asked): the same network fine-tuned, profiled here
  // too, and per target its fastest strategy where one fits.
  struct FineTuned {
    std::string label;  // "LoRA rank 16"
    int lora_rank = 0;
    std::string base_weights;
    std::vector<std::optional<std::pair<std::string, Limit>>> best;  // one a target
    // Not profiled, where its weights and adapters' state alone pass every
    // budget: why ("its weights ... alone take 346.2 GB a GPU"); "": profiled.
    std::string why_none;
  };
  std::vector<FineTuned> fine_tuned;
};

bool fits_nowhere(const std::vector<Limit>& row) {
  return std::all_of(row.begin(), row.end(), [](const Limit& l) { return l.max_batch == 0; });
}

nlohmann::json layout_json(const std::optional<workflow::LayoutPlanned>& planned) {
  if (!planned) return nullptr;
  const model::LayoutEstimate& e = planned->answer.best.front();
  return {{"gpus", e.layout.gpus()},
          {"layout", e.layout.label()},
          {"plan", e.plan},
          {"peak_bytes", e.peak_bytes},
          {"tokens_per_s", e.tokens_per_s},
          {"global_batch", planned->global_batch},
          {"offload_optimizer", e.layout.offload_optimizer},
          {"gpus_per_node", planned->setting.links.gpus_per_node}};
}

nlohmann::json fewest_json(const std::optional<Limits::Fewest>& f) {
  if (!f) return nullptr;
  if (!f->planned) return {{"why_none", f->why_none}};
  nlohmann::json out = layout_json(f->planned);
  if (f->on_device) out["without_offload"] = layout_json(f->on_device);
  return out;
}

// "the fewest that fit: 8, laid out t4s p2 d1 z3 mb2x64 under keep: 1234 tokens/s".
std::string fewest_text(const workflow::LayoutPlanned& planned) {
  const model::LayoutEstimate& e = planned.answer.best.front();
  const int gpus = e.layout.gpus();
  return (gpus == 1 ? std::string("one fits") : "the fewest that fit: " + std::to_string(gpus)) + ", laid out " +
         e.layout.label() + (e.layout.offload_optimizer ? " (the optimizer's state on the host)" : "") + " under " + e.plan +
         ": " + per_second(e.tokens_per_s) + " tokens/s";
}

nlohmann::json fine_tuned_json(const Limits& l, size_t target) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : l.fine_tuned) {
    const auto& best = f.best[target];
    out.push_back({{"label", f.label},
                   {"lora_rank", f.lora_rank},
                   {"base_weights", f.base_weights},
                   {"strategy", best ? nlohmann::json(best->first) : nlohmann::json()},
                   {"max_batch", best ? best->second.max_batch : 0},
                   {"peak_bytes", best ? nlohmann::json(best->second.estimate.peak_bytes) : nlohmann::json()},
                   {"samples_per_s", best ? nlohmann::json(best->second.estimate.samples_per_s) : nlohmann::json()}});
    if (!f.why_none.empty()) out.back()["why_none"] = f.why_none;
  }
  return out;
}

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
                     {"static_bytes", l.static_bytes},
                     {"static_bytes_per_gpu", l.static_bytes_per_gpu},
                     {"data_parallel", data_parallel_json(l.targets[k].data_parallel)},
                     {"parameters", l.parameters ? nlohmann::json(*l.parameters) : nlohmann::json()},
                     {"fewest_gpus_that_fit", fewest_json(l.fewest[k])},
                     {"fine_tuned_instead", fine_tuned_json(l, k)},
                     {"notes", l.targets[k].notes}});
    }
  }
}

void print_text(std::ostream& out, const Limits& l) {
  const bool data_parallel = l.targets.front().data_parallel.active();
  out << "papaya limits: " << l.network << " (" << l.precision << ", profiled on " << l.profiled_on
      << "): largest batch (samples/s there), budget " << l.budget_text << "\n";
  for (const auto& t : l.targets) {
    if (t.data_parallel.active()) out << "data parallel: " << t.name << data_parallel_text(t.data_parallel) << "\n";
  }
  if (data_parallel) out << "batch and memory per GPU, samples/s of all GPUs\n";
  out << "weights, gradients and AdamW state: " << model::format_bytes(l.static_bytes);
  if (l.parameters) {
    out << " (" << fixed(l.static_bytes / static_cast<double>(*l.parameters), 1) << " bytes x " << *l.parameters
        << " parameters)";
  }
  if (data_parallel) out << "; per GPU: " << model::format_bytes(l.static_bytes_per_gpu);
  out << "\n";
  std::vector<std::string> header = {"strategy"};
  for (const auto& t : l.targets) header.push_back(t.name);
  // The strategies that fit nowhere are counted, not listed.
  Table table(header);
  size_t left_out = 0;
  for (size_t s = 0; s < l.strategies.size(); ++s) {
    if (fits_nowhere(l.limits[s])) {
      ++left_out;
      continue;
    }
    std::vector<std::string> row = {l.strategies[s]};
    for (const Limit& limit : l.limits[s]) {
      row.push_back(
          limit.max_batch > 0 ? std::to_string(limit.max_batch) + " (" + per_second(limit.estimate.samples_per_s) + "/s)" : "-");
    }
    table.add_row(row);
  }
  if (left_out < l.strategies.size()) table.print(out);
  if (left_out > 0) {
    out << (left_out == l.strategies.size() ? "no strategy fits on any of them"
                                            : "not shown: " + std::to_string(left_out) + " strategies that fit on none of them")
        << " (--json lists every one)\n";
  }
  for (size_t k = 0; k < l.targets.size(); ++k) {
    if (!l.fewest[k]) continue;
    const Limits::Fewest& f = *l.fewest[k];
    const std::string& name = l.targets[k].name;
    out << name << ", " << model::format_bytes(l.budgets[k]) << " a GPU: "
        << (l.static_bytes_per_gpu > l.budgets[k] ? "the weights, gradients and AdamW state alone pass it"
                                                  : "no strategy fits one GPU")
        << "\n";
    if (!f.planned) {
      out << "  " << f.why_none << "\n";
      continue;
    }
    out << "  " << fewest_text(*f.planned) << "\n";
    if (f.on_device) out << "  without offloading, " << fewest_text(*f.on_device) << "\n";
    for (const auto& tuned : l.fine_tuned) {
      const auto& best = tuned.best[k];
      out << "  fine-tuned with " << tuned.label << " instead: "
          << (best ? "one fits, batch " + std::to_string(best->second.max_batch) + " under " + best->first + " (" +
                         per_second(best->second.estimate.samples_per_s) + " samples/s)"
                   : "one does not fit either" + (tuned.why_none.empty() ? "" : ": " + tuned.why_none))
          << "\n";
    }
    out << "  (limits with --gpus N --gpus-per-node " << f.planned->setting.links.gpus_per_node << " --hardware " << name
        << " shows the best layouts of N)\n";
  }
  for (const auto& t : l.targets) {
    for (const auto& note : t.notes) out << "note: " << t.name << ": " << note << "\n";
  }
}

// Where nothing fits one GPU of a target: the fewest GPUs of it that a
// layout fits (a transformer's; another network says why not).
// `workers`: the threads its search prices on.
std::optional<Limits::Fewest> fewest_gpus(const LimitsArgs& args, const model::LayerModel& m, const std::string& hardware,
                                          std::optional<double> budget, int workers, workflow::Reporter& reporter) {
  Limits::Fewest f;
  try {
    constexpr int most = 4096;
    workflow::ParallelRequest request = layout_search_request(args.parallel, hardware, budget);
    request.question.workers = workers;
    workflow::FewestGpus fewest = workflow::fewest_gpus_that_fit(m, request, reporter, most);
    f.planned = std::move(fewest.planned);
    f.on_device = std::move(fewest.on_device);
    if (!f.planned) f.why_none = "no layout of up to " + std::to_string(most) + " GPUs fits it either";
  } catch (const InputError& e) {
    f.why_none = std::string("papaya lays out only a transformer over more GPUs (") + e.what() + ")";
  }
  return f;
}

// The model of --network: profiled quickly at the two smallest default
// batches, in part where the network is large (workflow/profile_and_fit.h).
model::LayerModel profiled_model(const LimitsArgs& args, const model::NetworkConfig& network) {
  workflow::ProfileAndFitRequest request;
  request.network = network;
  request.device = args.device.empty() ? executor::default_device() : args.device;
  request.precision = args.precision;
  const std::vector<int> batches = workflow::default_profile_batches(network);
  request.batches = {batches[0], batches[1]};
  request.quick = true;
  request.profile_blocks = args.profile_blocks;
  request.shape_parts = args.profile_parts;
  request.alike_experts_once = true;  // limits names no layer
  request.catalog_targets_only = true;
  ProgressReporter reporter;
  return workflow::profile_and_fit(request, reporter).model;
}

void check_sources(const LimitsArgs& args) {
  if (args.model.empty() == args.network.empty()) throw InputError("limits: give a model file or --network, one of them");
  if (!args.model.empty() && (args.seq_len || args.profile_blocks > 0 || args.profile_parts > 0 || !args.precision.empty())) {
    throw InputError("limits " + args.model +
                     ": --seq-len, --profile-blocks, --profile-parts and --precision go with --network (a model is "
                     "fitted already)");
  }
  if (args.hardware.empty()) throw InputError("limits: --hardware is needed: the catalog entries to size the batch for");
  std::vector<std::string> entries;
  for (const auto& name : split_commas(args.hardware)) {  // before minutes of profiling
    const model::HardwareSpec hardware = model::load_hardware(name);
    hardware.check_runs(args.precision);
    if (std::find(entries.begin(), entries.end(), hardware.name) != entries.end()) {
      throw InputError("--hardware " + args.hardware + ": " + hardware.name + " is named twice");
    }
    entries.push_back(hardware.name);
  }
}

// The model, read or the network profiled here, with its alike experts priced once.
model::LayerModel limits_model(const LimitsArgs& args, std::optional<int64_t>* parameters) {
  if (args.network.empty()) return model::collapse_alike_experts(model::read_layer_model(args.model));
  const model::NetworkConfig network = load_network(args.network, args.seq_len, args.network_options);
  if (parameters) *parameters = model::parameter_count(network);
  return profiled_model(args, network);
}

// --tokens and --price, checked: each price NAME=USD of an entry of --hardware.
TrainingQuestion training_question(const LimitsArgs& args) {
  TrainingQuestion q;
  q.tokens = args.tokens;
  if (!args.prices.empty() && !args.tokens) throw InputError("--price prices --tokens: give the tokens to train on");
  std::vector<std::string> hardware;
  for (const auto& name : split_commas(args.hardware)) hardware.push_back(model::load_hardware(name).name);
  for (const std::string& text : args.prices) {
    const size_t equals = text.find('=');
    if (equals == std::string::npos || equals == 0) {
      throw InputError("--price '" + text + "': expected NAME=USD_PER_GPU_HOUR, such as H100-SXM-80GB=2.99");
    }
    const std::string name = model::load_hardware(text.substr(0, equals)).name;
    if (std::find(hardware.begin(), hardware.end(), name) == hardware.end()) {
      throw InputError("--price '" + text + "': " + name + " is not among --hardware " + args.hardware);
    }
    const std::string usd = text.substr(equals + 1);
    char* end = nullptr;
    const double value = std::strtod(usd.c_str(), &end);
    if (usd.empty() || *end != '\0' || !(value > 0) || !std::isfinite(value)) {
      throw InputError("--price '" + text + "': the price of a GPU-hour must be a number of US dollars above 0");
    }
    if (!q.usd_per_gpu_hour.emplace(name, value).second) throw InputError("--price: " + name + " priced twice");
  }
  return q;
}

// A layout beyond data-parallel ranks, or --tokens: the best layout on each hardware entry.
void layout_limits(const LimitsArgs& args, const workflow::ParallelRequest& request, const Output& output) {
  check_sources(args);
  const TrainingQuestion training = training_question(args);
  if (!args.html.empty()) check_html_report(args.html);
  show_layout_limits(limits_model(args, nullptr), args.parallel.emit, request, split_commas(args.hardware), training, args.html,
                     output);
}

// Each strategy's largest batch on each target, within its budget.
std::vector<std::vector<Limit>> largest_batches(const model::LayerModel& m, const std::vector<model::Target>& targets,
                                                const std::vector<double>& budgets, const std::vector<std::string>& strategies) {
  std::vector<model::Plan> plans;
  const model::NetworkLayout layout = m.layout();
  for (const auto& name : strategies) plans.push_back(model::expand_plan_name(name, layout));
  std::vector<std::vector<Limit>> limits(strategies.size(), std::vector<Limit>(targets.size()));
  for (size_t k = 0; k < targets.size(); ++k) {
    // One space a target for every plan: indexing a network of many layers takes long.
    const model::PlanSpace space(m, targets[k], 1);
    for (size_t s = 0; s < plans.size(); ++s) {
      const model::Assignment a = space.assignment(plans[s]);
      const int64_t largest = model::max_batch(space, a, budgets[k]);
      limits[s][k] = {largest, largest > 0 ? space.at_batch(largest).evaluate(a) : model::Estimate{}};
    }
  }
  return limits;
}

// --network fine-tuned with LoRA at rank 16 (PEFT's common choice), and,
// where that fits not every target, with QLoRA (the frozen base in nf4),
// each profiled as --network was, on the same targets and budgets. A
// network LoRA does not apply to (an archive, one without attention) has none.
// One whose weights and adapters' state alone pass every budget (a GPU
// holds at least its even share of them) is not profiled: a mixture of
// hundreds of billions of parameters takes minutes to, in vain.
std::vector<Limits::FineTuned> fine_tuned_instead(const LimitsArgs& args, const workflow::ParallelRequest& parallel,
                                                  const std::vector<double>& budgets) {
  constexpr int rank = 16;
  const double most_budget = *std::max_element(budgets.begin(), budgets.end());
  std::vector<Limits::FineTuned> out;
  for (const auto& [label, base] : {std::pair<std::string, std::string>{"LoRA rank 16", ""},
                                    std::pair<std::string, std::string>{"QLoRA rank 16 (the base in nf4)", "nf4"}}) {
    NetworkOptions options = args.network_options;
    options.lora_rank = rank;
    if (!base.empty()) options.base_weights = base;
    model::NetworkConfig network;
    try {
      network = load_network(args.network, args.seq_len, options);
    } catch (const InputError&) {
      return {};
    }
    Limits::FineTuned tuned{label, rank, base.empty() ? "fp32" : base, {}, {}};
    const double state_a_gpu = model::static_state_bytes(network) / parallel.gpus();
    if (state_a_gpu > most_budget) {
      tuned.best.resize(budgets.size());
      tuned.why_none = "its weights and the adapters' gradients and AdamW state alone take " + model::format_bytes(state_a_gpu) +
                       (parallel.gpus() > 1 ? " a GPU" : "");
      out.push_back(tuned);
      continue;
    }
    const model::LayerModel m = profiled_model(args, network);
    std::vector<model::Target> targets;
    for (const auto& name : split_commas(args.hardware)) {
      targets.push_back(model::make_target(m, name));
      workflow::apply_data_parallel(targets.back(), m, parallel, parallel.zero_stages(false).front());
    }
    const std::vector<std::string> strategies = model::plan_names(m, targets.front());
    const std::vector<std::vector<Limit>> limits = largest_batches(m, targets, budgets, strategies);
    for (size_t k = 0; k < targets.size(); ++k) {
      std::optional<std::pair<std::string, Limit>> best;
      for (size_t s = 0; s < strategies.size(); ++s) {
        const Limit& limit = limits[s][k];
        if (limit.max_batch > 0 && (!best || limit.estimate.samples_per_s > best->second.estimate.samples_per_s)) {
          best = std::make_pair(strategies[s], limit);
        }
      }
      tuned.best.push_back(best);
    }
    out.push_back(tuned);
    if (std::all_of(tuned.best.begin(), tuned.best.end(), [](const auto& best) { return best.has_value(); })) break;
  }
  return out;
}

// On one GPU or data-parallel ranks of each hardware entry.
Limits compute(const LimitsArgs& args, const workflow::ParallelRequest& parallel) {
  check_sources(args);
  Limits l;
  const model::LayerModel m = limits_model(args, &l.parameters);
  l.static_bytes = m.static_bytes;
  l.network = m.network;
  l.precision = m.precision;
  l.profiled_on = m.machine.device;
  for (const auto& name : split_commas(args.hardware)) {
    l.targets.push_back(model::make_target(m, name));
    workflow::apply_data_parallel(l.targets.back(), m, parallel, parallel.zero_stages(false).front());
  }
  l.static_bytes_per_gpu = model::static_bytes_per_rank(m, l.targets.front().data_parallel);
  // Each target's budget: --budget, or 80% of its memory.
  const bool budget_given = !args.budget.empty();
  for (const auto& t : l.targets) {
    l.budgets.push_back(budget_given ? static_cast<double>(model::parse_size(args.budget, "--budget"))
                                     : model::default_budget(t));
    if (budget_given) t.check_budget(l.budgets.back());
  }
  l.budget_text = budget_given ? model::format_bytes(l.budgets.front()) : "80% of each device's memory";
  // Every catalog entry has a host link, so every target has the same rows.
  l.strategies = model::plan_names(m, l.targets.front());
  l.limits = largest_batches(m, l.targets, l.budgets, l.strategies);
  std::optional<double> budget;
  if (budget_given) budget = l.budgets.front();
  // Where no strategy fits one GPU of a target, the fewest GPUs that do:
  // the searches share only the model, which none changes, so as many run
  // at once as the machine has cores (each holds its own stages' spaces),
  // each pricing on its share of the search's threads.
  l.fewest.resize(l.targets.size());
  std::vector<size_t> unfit;
  for (size_t k = 0; k < l.targets.size(); ++k) {
    const bool none =
        std::all_of(l.limits.begin(), l.limits.end(), [k](const std::vector<Limit>& row) { return row[k].max_batch == 0; });
    if (none) unfit.push_back(k);
  }
  const size_t lanes = std::max(1u, std::thread::hardware_concurrency());
  for (size_t first = 0; first < unfit.size(); first += lanes) {
    const size_t end = std::min(unfit.size(), first + lanes);
    LanesProgress progress("laying out " + m.network,
                           end - first);  // outlives the searches (a future waits for its search when destroyed)
    std::vector<std::future<std::optional<Limits::Fewest>>> searches;
    const int workers = std::max(1, model::default_workers() / static_cast<int>(end - first));
    for (size_t i = first; i < end; ++i) {
      searches.push_back(std::async(std::launch::async, fewest_gpus, std::cref(args), std::cref(m), l.targets[unfit[i]].name,
                                    budget, workers, std::ref(progress.lane(i - first))));
    }
    for (size_t i = 0; i < searches.size(); ++i) l.fewest[unfit[first + i]] = searches[i].get();
  }
  const bool none_anywhere = std::all_of(l.fewest.begin(), l.fewest.end(), [](const auto& f) { return f.has_value(); });
  const NetworkOptions& given = args.network_options;
  if (none_anywhere && !args.network.empty() && given.lora_rank == 0 && given.freeze.empty()) {
    l.fine_tuned = fine_tuned_instead(args, parallel, l.budgets);
  }
  return l;
}

// A global model (fit --measurements --out): each series' largest batch
// under --budget, on the GPUs its runs were measured on.
GlobalPredictionReport limits_from_global(const LimitsArgs& args) {
  if (!args.hardware.empty() || args.parallel.gpus_requested() || args.parallel.layout_requested()) {
    throw InputError("limits " + args.model +
                     ": a global model holds the GPUs its runs were measured on; --hardware, --gpus and a layout go with a "
                     "layer model (papaya fit PROFILE) or --network");
  }
  std::optional<double> budget;
  if (!args.budget.empty()) budget = static_cast<double>(model::parse_size(args.budget, "--budget"));
  return {"limits", args.model, model::predict_global(model::load_global_model(args.model), args.model, std::nullopt, budget)};
}

}  // namespace

void register_limits(CLI::App& app) {
  auto args = std::make_shared<LimitsArgs>();
  auto* cmd = app.add_subcommand("limits",
                                 "The largest batch of each memory optimization on each hardware, from a model (papaya fit) or a "
                                 "network profiled here (--network: quickly; a large transformer 2 of its blocks at three small "
                                 "fractions of its shape, modelled whole).");
  cmd->add_option("model", args->model,
                  "Model (JSON): a layer model (papaya fit PROFILE), or a global model (papaya fit --measurements --out): "
                  "each measured series' largest batch under --budget; or --network");
  add_network_choice_options(cmd, args->network, args->seq_len, args->network_options, /*models=*/true);
  add_profile_blocks_option(cmd, args->profile_blocks);
  add_profile_parts_option(cmd, args->profile_parts);
  add_precision_option(cmd, args->precision);
  cmd->add_option("--device,-d", args->device,
                  "With --network: cpu, cuda or cuda:N to profile on; default: cuda where there is one, else cpu");
  cmd->add_option("--hardware", args->hardware,
                  "Catalog entries, comma-separated (papaya hardware); needed but with a global model");
  cmd->add_option("--budget", args->budget,
                  "Memory budget (e.g. 24GiB); default: 80% of each device's memory (a global model: each GPU's memory)");
  add_parallel_options(cmd, args->parallel, LayoutChoice::searched);
  cmd->add_option("--tokens", args->tokens,
                  "Tokens to train on (e.g. 2e12): the time they take on each hardware's best layout of --gpus (default 1)")
      ->check(positive(args->tokens));
  cmd->add_option("--price", args->prices,
                  "A GPU-hour's price in US dollars, NAME=USD (repeatable: --price H100-SXM-80GB=2.99): the cost of --tokens "
                  "on that hardware, the cheapest named");
  cmd->add_option("--html", args->html,
                  "With a layout or --tokens: write the best layout on each hardware as a self-contained page (tokens/s, "
                  "time and cost as bars; the table)");
  const auto output = add_output_options(cmd);
  cmd->callback([args, output] {
    std::optional<double> budget;
    if (!args->budget.empty()) budget = static_cast<double>(model::parse_size(args->budget, "--budget"));
    // Tokens are trained on the best layout of the GPUs, whatever its degrees.
    const bool priced = args->tokens || !args->prices.empty();
    const workflow::ParallelRequest parallel = priced ? layout_search_request(args->parallel, "", budget)
                                                      : parallel_request(args->parallel, LayoutChoice::searched, "", budget);
    parallel.validate();
    if (priced || !parallel.data_parallel_only()) return layout_limits(*args, parallel, *output);
    if (!args->html.empty()) {
      throw InputError("--html " + args->html +
                       ": draws the layouts of --tokens or --gpus-per-node; the table of batches is text "
                       "or --json");
    }
    if (!args->model.empty() && args->network.empty() && model::is_global_model_file(args->model)) {
      return show(limits_from_global(*args), *output);
    }
    show(compute(*args, parallel), *output);
  });
}

}  // namespace papaya::cli
