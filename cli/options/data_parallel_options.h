#pragma once
// --gpus N [--zero S] [--link NAME] on predict, limits, plan and recommend:
// every figure per GPU of N data-parallel ones (model/parallel/data_parallel.h), their
// samples/s together.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "model/parallel/data_parallel.h"
#include "workflow/data_parallel.h"

namespace papaya::cli {

// Registers the three options on `cmd`; `chooses_stage`: the command picks
// the ZeRO stage itself where --zero is not given (plan, recommend).
void add_data_parallel_options(CLI::App* cmd, workflow::DataParallelRequest& request, bool chooses_stage = false);

// For reports: " x 8 GPUs (ZeRO-1, over NVLink-2: 10 us, 150.00 GB/s a GPU)",
// "" for one GPU; and
// {"gpus", "zero", "link"} (gpus 1: zero 0, link null).
std::string data_parallel_text(const model::DataParallel& world);
nlohmann::json data_parallel_json(const model::DataParallel& world);

}  // namespace papaya::cli
