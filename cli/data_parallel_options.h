#pragma once
// --gpus N [--zero S] [--link NAME] on predict, limits, plan and recommend:
// every figure per GPU of N data-parallel ones (model/parallel/data_parallel.h), their
// samples/s together.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/catalog/target.h"

namespace papaya::cli {

struct DataParallelArgs {
  int gpus = 1;
  std::optional<int> zero;  // nullopt: 0, or where the command chooses, its choice
  std::string link;         // "": the hardware's interconnect
};

// Registers the three options on `cmd`; `chooses_stage`: the command picks
// the ZeRO stage itself where --zero is not given (plan, recommend).
void add_data_parallel_options(CLI::App* cmd, DataParallelArgs& args, bool chooses_stage = false);

// Checks the options against each other (before any long work): InputError
// for --zero or --link without --gpus 2 or more, or a link the catalog
// lacks that is no file either.
void check_data_parallel(const DataParallelArgs& args);

// Throws InputError where --gpus asks for ranks on `where`, whose
// interconnect is not known (a CPU, a GPU outside the catalog), and no
// --link says what joins them.
void require_link(const DataParallelArgs& args, const std::string& where);

// `target` as args.gpus ranks at `zero_stage` over --link, else over the
// interconnect of `target`'s catalog entry (a profiled CPU has none: then
// --link is needed, an InputError says so). One GPU: `target` unchanged.
void apply_data_parallel(model::Target& target, const model::LayerModel& model, const DataParallelArgs& args, int zero_stage);

// For reports: " x 8 GPUs (ZeRO-1, over NVLink-2: 10 us, 150.00 GB/s a GPU)",
// "" for one GPU; and
// {"gpus", "zero", "link"} (gpus 1: zero 0, link null).
std::string data_parallel_text(const model::DataParallel& world);
nlohmann::json data_parallel_json(const model::DataParallel& world);
// The weights, gradients and optimizer state one GPU of `world` holds.
double static_bytes_per_gpu(const model::LayerModel& model, const model::DataParallel& world);

// The stages a command considers: --zero's, else 0 (or, where it chooses, 0 to 3).
std::vector<int> zero_stages(const DataParallelArgs& args, bool chooses_stage);

}  // namespace papaya::cli
