#include "workflow/training/resumed_run.h"

#include <algorithm>
#include <sstream>

#include "model/error.h"
#include "model/json_file.h"

namespace papaya::workflow {
namespace {

using nlohmann::json;

// `setting` as TrainRun::given names it; in words, with '_' as ' '.
template <typename T>
void check_same(const TrainRun& given, const std::string& setting, const T& asked, const T& recorded) {
  if (!given.given.count(setting) || asked == recorded) return;
  std::string words = setting;
  std::replace(words.begin(), words.end(), '_', ' ');
  std::ostringstream message;
  message << "training state " << given.resume << ": its run has " << words << " " << recorded << ", not " << asked
          << " (leave the " << words << " out to go on as it was)";
  throw InputError(message.str());
}

}  // namespace

json describe_run(const TrainRun& run, const json& config_doc, const model::Plan& plan, const model::NetworkLayout& layout) {
  return {{"network_config", config_doc},
          {"plan", model::plan_to_json(plan, layout)},
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
    throw InputError("training state " + given.resume + ": damaged (" + e.what() + ")");
  }
  check_same(given, "precision", given.precision, run.precision);
  check_same(given, "batch", given.batch, run.batch);
  check_same(given, "seed", given.seed, run.seed);
  check_same(given, "lr", given.lr, run.lr);
  check_same(given, "adaptive_every", given.adaptive_every, run.adaptive_every);
  check_same(given, "data", given.data, run.data);
  if (given.given.count("network")) {
    if (given.network_config->document != recorded.value("network_config", json())) {
      throw InputError("training state " + given.resume + ": it is of another network than " + given.network +
                       " (leave the network out to go on as it was)");
    }
  }
  if (steps_done >= given.steps) {
    throw InputError("training state " + given.resume + ": it is at step " + std::to_string(steps_done) +
                     " already, and the run trains up to step " + std::to_string(given.steps) + " in all");
  }
  return run;
}

model::NetworkConfig recorded_config(const TrainRun& run, const json& recorded) {
  if (!recorded.contains("network_config")) throw InputError("training state " + run.resume + ": damaged (no network config)");
  return model::parse_network_config(recorded.at("network_config"), "training state " + run.resume + ": network config");
}

void check_resumed_plan(const TrainRun& run, const model::Plan& recorded, const model::NetworkLayout& layout,
                        const std::string& network_name) {
  if (!run.given.count("plan")) return;
  if (model::plan_to_json(model::load_plan(run.plan, layout, network_name), layout) != model::plan_to_json(recorded, layout)) {
    throw InputError("training state " + run.resume + ": its run has plan '" + recorded.name + "', not " + run.plan +
                     " (leave the plan out to go on as it was)");
  }
}

}  // namespace papaya::workflow
