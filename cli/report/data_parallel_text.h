#pragma once
// Data-parallel GPUs as reports show them (model/parallel/data_parallel.h).
#include <nlohmann/json.hpp>
#include <string>

#include "model/parallel/data_parallel.h"

namespace papaya::cli {

// " x 8 GPUs (ZeRO-1, over NVLink-2: 10 us, 150.00 GB/s a GPU)", "" for one GPU; and
// {"gpus", "zero", "link"} (gpus 1: zero 0, link null).
std::string data_parallel_text(const model::DataParallel& world);
nlohmann::json data_parallel_json(const model::DataParallel& world);

}  // namespace papaya::cli
