#include "cli/training/resumed_run.h"

#include <sstream>

#include "model/error.h"
#include "model/json_file.h"

namespace papaya::cli {
namespace {

using nlohmann::json;

template <typename T>
void check_same(const TrainRun& given, const std::string& option, const T& asked, const T& recorded) {
  if (!given.given.count(option) || asked == recorded) return;
  std::ostringstream message;
  message << "--resume " << given.resume << ": the state's run has " << option << " " << recorded << ", not " << asked
          << " (leave " << option << " out to go on as it was)";
  throw InputError(message.str());
}

}  // namespace

json describe_run(const TrainRun& run, const json& config_doc, const model::Plan& plan) {
  return {{"network_config", config_doc},
          {"plan", model::plan_to_json(plan)},
          {"precision", run.precision},
          {"batch", run.batch},
          {"seed", run.seed},
          {"lr", run.lr},
          {"adaptive_every", run.adaptive_every},
          {"data", run.data}};
}

TrainRun resumed_run(const TrainRun& given, const json& recorded, int steps_done) {
  TrainRun run = given;
  try {
    run.precision = recorded.at("precision").get<std::string>();
    run.batch = recorded.at("batch").get<int64_t>();
    run.seed = recorded.at("seed").get<uint64_t>();
    run.lr = recorded.at("lr").get<double>();
    run.adaptive_every = recorded.at("adaptive_every").get<int>();
    run.data = recorded.at("data").get<std::string>();
  } catch (const json::exception& e) {
    throw InputError("--resume " + given.resume + ": damaged training state (" + e.what() + ")");
  }
  check_same(given, "--precision", given.precision, run.precision);
  check_same(given, "--batch", given.batch, run.batch);
  check_same(given, "--seed", given.seed, run.seed);
  check_same(given, "--lr", given.lr, run.lr);
  check_same(given, "--adaptive-every", given.adaptive_every, run.adaptive_every);
  check_same(given, "--data", given.data, run.data);
  if (given.given.count("--network") || given.given.count("--seq-len")) {
    if (given.network_config->document != recorded.value("network_config", json())) {
      throw InputError("--resume " + given.resume + ": the state is of another network than " + given.network +
                       " (leave --network out to go on as it was)");
    }
  }
  if (steps_done >= given.steps) {
    throw InputError("--resume " + given.resume + ": the state is at step " + std::to_string(steps_done) +
                     " already; --steps N trains up to step N in all");
  }
  return run;
}

model::NetworkConfig recorded_config(const TrainRun& run, const json& recorded) {
  if (!recorded.contains("network_config"))
    throw InputError("--resume " + run.resume + ": damaged training state (no network config)");
  return model::parse_network_config(recorded.at("network_config"), "--resume " + run.resume + ": network config");
}

void check_resumed_plan(const TrainRun& run, const model::Plan& recorded, const model::NetworkLayout& layout,
                        const std::string& network_name) {
  if (!run.given.count("--plan")) return;
  if (model::plan_to_json(model::load_plan(run.plan, layout, network_name)) != model::plan_to_json(recorded)) {
    throw InputError("--resume " + run.resume + ": the state's run has plan '" + recorded.name + "', not " + run.plan +
                     " (leave --plan out to go on as it was)");
  }
}

}  // namespace papaya::cli
