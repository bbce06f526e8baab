#include "cli/train_run.h"

#include "executor/data.h"
#include "executor/device.h"
#include "executor/layout.h"
#include "executor/memory.h"
#include "executor/plan_apply.h"
#include "executor/trainer.h"
#include "model/network_config.h"

namespace papaya::cli {

void check_train_run(const TrainRun& run) {
  executor::resolve_device(run.device);
  executor::resolve_precision(run.precision);
  model::load_network_config(run.network);
}

executor::TrainReport train_run(const TrainRun& run, const TrainCallbacks& callbacks) {
  const torch::Device device = executor::resolve_device(run.device);
  const torch::ScalarType dtype = executor::resolve_precision(run.precision);
  const model::NetworkConfig config = model::load_network_config(run.network);
  auto data = run.data.empty() ? executor::make_synthetic_data(config, device, run.seed)
                               : executor::make_text_data(run.data, config, device, run.seed);

  executor::MemoryTracker memory(device);  // before the network, so that its weights count
  torch::manual_seed(run.seed);
  auto network = executor::build_network(config);
  network->to(device);
  network->set_compute_dtype(dtype);
  const model::NetworkLayout layout = executor::probe_layout(*network);
  const model::Plan plan = run.planned ? *run.planned : model::load_plan(run.plan, layout, config.name);
  executor::PlanOptions plan_options;
  plan_options.adaptive_every = run.adaptive_every;
  plan_options.rounding_seed = run.seed;
  executor::AppliedPlan applied = executor::apply_plan(*network, plan, layout, plan_options);

  if (callbacks.on_start) {
    callbacks.on_start({config.name, model::to_string(config.family), network->parameter_count(), device.str(),
                        executor::device_name(device), plan.name, data->describe()});
  }
  executor::TrainOptions options;
  options.steps = run.steps;
  options.batch = run.batch;
  options.lr = run.lr;
  options.before_step = [&applied](int step) { applied.begin_step(step); };
  options.record_stored_bytes = run.record_stored_bytes;
  options.on_step = callbacks.on_step;
  return executor::train(*network, *data, memory, options);
}

}  // namespace papaya::cli
