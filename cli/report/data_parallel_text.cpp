#include "cli/report/data_parallel_text.h"

#include "cli/report/table.h"

namespace papaya::cli {

std::string data_parallel_text(const model::DataParallel& world) {
  if (!world.active()) return "";
  return " x " + std::to_string(world.ranks) + " GPUs (ZeRO-" + std::to_string(world.zero_stage) + ", over " + world.link_name +
         ": " + fixed(world.link.latency_s * 1e6, 0) + " us, " + fixed(world.link.bytes_per_s / 1e9, 2) + " GB/s a GPU)";
}

nlohmann::json data_parallel_json(const model::DataParallel& world) {
  return {{"gpus", world.ranks},
          {"zero", world.zero_stage},
          {"link", world.active() ? nlohmann::json(world.link_name) : nlohmann::json()}};
}

}  // namespace papaya::cli
