#pragma once
// What `papaya train --save` records of a run beside its tensors, and the
// run that `--resume` goes on with: the state's network, plan and options,
// with the options the user gave checked against them.
#include <nlohmann/json.hpp>

#include "model/catalog/network_config.h"
#include "workflow/training/train_settings.h"

namespace papaya::workflow {

// The run's description: the network config document, the plan's explicit
// form, precision, batch, seed, learning rate, adaptive interval, data file.
nlohmann::json describe_run(const TrainRun& run, const nlohmann::json& config_doc, const model::Plan& plan,
                            const model::NetworkLayout& layout);

// `given` with the recorded network, plan and options. Throws InputError,
// naming the state's file, where a setting in given.given differs from the
// state's (the plan is checked by check_resumed_plan once the network is
// built) or the state is at `given.steps` already.
TrainRun resumed_run(const TrainRun& given, const nlohmann::json& recorded, int steps_done);

// The recorded network config.
model::NetworkConfig recorded_config(const TrainRun& run, const nlohmann::json& recorded);

// Throws InputError if a plan was given ("plan" in run.given) and it is not the state's.
void check_resumed_plan(const TrainRun& run, const model::Plan& recorded, const model::NetworkLayout& layout,
                        const std::string& network_name);

}  // namespace papaya::workflow
