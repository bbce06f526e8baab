// papaya train: train a network of the zoo and report throughput, peak
// memory and loss.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/table.h"
#include "executor/data.h"
#include "executor/device.h"
#include "executor/layout.h"
#include "executor/memory.h"
#include "executor/plan_apply.h"
#include "executor/trainer.h"
#include "model/network_config.h"
#include "model/plan.h"
#include "model/units.h"

namespace papaya::cli {
namespace {

struct TrainArgs {
  std::string network = "gpt-tiny";
  int64_t batch = 8;
  int steps = 20;
  uint64_t seed = 0;
  std::string device = "cpu";
  std::string precision = "fp32";
  std::string data;
  double lr = 1e-3;
  std::string plan = "keep";
  int adaptive_every = 50;
  bool json = false;
};

void run(const TrainArgs& args) {
  const torch::Device device = executor::resolve_device(args.device);
  const torch::ScalarType dtype = executor::resolve_precision(args.precision);
  const model::NetworkConfig config = model::load_network_config(args.network);
  auto data = args.data.empty() ? executor::make_synthetic_data(config, device, args.seed)
                                : executor::make_text_data(args.data, config, device, args.seed);

  executor::MemoryTracker memory(device);  // before the network, so that its weights count
  torch::manual_seed(args.seed);
  auto network = executor::build_network(config);
  network->to(device);
  network->set_compute_dtype(dtype);
  const model::NetworkLayout layout = executor::probe_layout(*network);
  const model::Plan plan = model::load_plan(args.plan, layout, config.name);
  executor::PlanOptions plan_options;
  plan_options.adaptive_every = args.adaptive_every;
  plan_options.rounding_seed = args.seed;
  executor::AppliedPlan applied = executor::apply_plan(*network, plan, layout, plan_options);

  if (!args.json) {
    std::cout << "papaya train: " << config.name << " (" << model::to_string(config.family) << ", "
              << model::format_si(static_cast<double>(network->parameter_count())) << " parameters) on "
              << executor::device_name(device) << ", " << args.precision << ", batch " << args.batch << ", "
              << args.steps << " steps, plan " << plan.name << "\n"
              << "data: " << data->describe() << "\n";
  }
  executor::TrainOptions options;
  options.steps = args.steps;
  options.batch = args.batch;
  options.lr = args.lr;
  options.before_step = [&applied](int step) { applied.begin_step(step); };
  options.record_stored_bytes = true;
  Progress progress("training");
  options.on_step = [&](int step, int steps, double loss) { progress.update(step, steps, "loss " + fixed(loss, 4)); };
  const executor::TrainReport report = executor::train(*network, *data, memory, options);

  const int64_t activation = report.forward_backward_peak_bytes - report.static_bytes;
  if (args.json) {
    const nlohmann::json out = {{"network", config.name},
                                {"device", device.str()},
                                {"device_name", executor::device_name(device)},
                                {"precision", args.precision},
                                {"plan", plan.name},
                                {"batch", args.batch},
                                {"steps", args.steps},
                                {"warmup_steps", report.warmup_steps},
                                {"seed", args.seed},
                                {"samples_per_s", report.samples_per_s},
                                {"step_seconds", report.step_seconds},
                                {"peak_bytes", report.peak_bytes},
                                {"forward_backward_peak_bytes", report.forward_backward_peak_bytes},
                                {"forward_end_bytes", report.forward_end_bytes},
                                {"peak_reserved_bytes", report.peak_reserved_bytes},
                                {"static_bytes", report.static_bytes},
                                {"activation_bytes", activation},
                                {"stored_bytes", report.stored_bytes},
                                {"initial_loss", report.losses.front()},
                                {"final_loss", report.losses.back()},
                                {"losses", report.losses}};
    std::cout << out.dump(2) << "\n";
    return;
  }
  Table table({"measure", "value", "note"});
  const std::string over = "steps " + std::to_string(report.warmup_steps + 1) + "-" + std::to_string(args.steps);
  table.add_row({"samples/s", fixed(report.samples_per_s, 1), over});
  table.add_row({"step time", fixed(report.step_seconds * 1e3, 1) + " ms", over});
  table.add_row({"peak memory", model::format_bytes(static_cast<double>(report.peak_bytes)), "allocator peak, " + over});
  table.add_row({"static memory", model::format_bytes(static_cast<double>(report.static_bytes)),
                 "weights + gradients + AdamW state"});
  table.add_row({"activation peak", model::format_bytes(static_cast<double>(activation)),
                 "peak over forward and backward - static"});
  for (const auto& [strategy, bytes] : report.stored_bytes) {
    table.add_row({"stored: " + strategy, model::format_bytes(static_cast<double>(bytes)), "saved for backward, last step"});
  }
  table.add_row({"loss", fixed(report.losses.front(), 4) + " -> " + fixed(report.losses.back(), 4), "first -> last step"});
  table.print(std::cout);
}

}  // namespace

void register_train(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  auto* cmd = app.add_subcommand("train", "Train a network (synthetic data, or a text file) and report samples/s, peak memory and loss.");
  cmd->add_option("--network,-n", args->network, "Network config name (see papaya networks) or path to a .json config")
      ->capture_default_str();
  cmd->add_option("--batch,-b", args->batch, "Samples per step")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--steps,-s", args->steps, "Training steps")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--seed", args->seed, "Seed of weights and data")->capture_default_str();
  cmd->add_option("--device,-d", args->device, "cpu, cuda or cuda:N")->capture_default_str();
  cmd->add_option("--precision", args->precision, "Activation precision: fp32 or bf16 (weights stay fp32)")
      ->capture_default_str();
  cmd->add_option("--data", args->data, "Text file to train a gpt network on as a character-level language model");
  cmd->add_option("--lr", args->lr, "AdamW learning rate")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--plan", args->plan,
                  "Memory optimizations: a plan file, or a name: keep, recompute-all, quantize-{8,4,2}, adaptive-N, "
                  "invert, swap, joined by '+' (e.g. quantize-2+invert)")
      ->capture_default_str();
  cmd->add_option("--adaptive-every", args->adaptive_every, "Steps between sensitivity estimates of adaptive-N tensors")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", args->json, "One JSON document instead of a table");
  cmd->callback([args] { run(*args); });
}

}  // namespace papaya::cli
