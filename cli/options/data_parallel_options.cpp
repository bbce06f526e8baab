#include "cli/options/data_parallel_options.h"

#include "cli/options/number_checks.h"
#include "cli/report/table.h"

namespace papaya::cli {

void add_data_parallel_options(CLI::App* cmd, workflow::DataParallelRequest& args, bool chooses_stage) {
  cmd->add_option("--gpus", args.gpus,
                  "Data-parallel GPUs (one rank each): memory per GPU, samples/s of all, the gradient exchange on --link")
      ->capture_default_str()
      ->check(within(args.gpus, 1, 65536));
  cmd->add_option("--zero", args.zero,
                  std::string("With --gpus: the ZeRO stage, 0 (plain data parallelism) to 3 (weights sharded too)") +
                      (chooses_stage ? "; default: the fastest that fits" : "; default: 0"))
      ->check(within(args.zero, 0, 3));
  cmd->add_option("--link", args.link,
                  "With --gpus: the link between the GPUs, a catalog entry (papaya hardware lists them: NVLink-4, PCIe-4-x16, "
                  "InfiniBand-NDR, ...) or a file from papaya profile --comm --out; default: the hardware's interconnect");
}

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
