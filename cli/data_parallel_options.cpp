#include "cli/data_parallel_options.h"

#include "cli/table.h"
#include "model/error.h"
#include "model/catalog/hardware.h"
#include "model/catalog/link_catalog.h"

namespace papaya::cli {

void add_data_parallel_options(CLI::App* cmd, DataParallelArgs& args, bool chooses_stage) {
  cmd->add_option("--gpus", args.gpus,
                  "Data-parallel GPUs (one rank each): memory per GPU, samples/s of all, the gradient exchange on --link")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  cmd->add_option("--zero", args.zero,
                  std::string("With --gpus: the ZeRO stage, 0 (plain data parallelism) to 3 (weights sharded too)") +
                      (chooses_stage ? "; default: the fastest that fits" : "; default: 0"))
      ->check(CLI::Range(0, 3));
  cmd->add_option("--link", args.link,
                  "With --gpus: the link between the GPUs, a catalog entry (papaya hardware lists them: NVLink-4, PCIe-4-x16, "
                  "InfiniBand-NDR, ...) or a file from papaya profile --comm --out; default: the hardware's interconnect");
}

void check_data_parallel(const DataParallelArgs& args) {
  if (args.gpus > 1) {
    if (!args.link.empty()) model::load_link(args.link);
    return;
  }
  if (args.zero && *args.zero > 0) {
    throw InputError("--zero " + std::to_string(*args.zero) + " shards across GPUs: give --gpus 2 or more");
  }
  if (!args.link.empty()) throw InputError("--link " + args.link + " joins GPUs: give --gpus 2 or more");
}

void require_link(const DataParallelArgs& args, const std::string& where) {
  if (args.gpus < 2 || !args.link.empty()) return;
  throw InputError("--gpus " + std::to_string(args.gpus) + " on " + where + ": no interconnect known; give --link (" +
                   model::link_names() + ", or a file from papaya profile --comm --out)");
}

void apply_data_parallel(model::Target& target, const model::LayerModel& model, const DataParallelArgs& args, int zero_stage) {
  if (args.gpus < 2) return;
  std::string link = args.link;
  if (link.empty()) {
    const auto hardware = target.profiled ? model::catalog_entry_for(model.machine) : model::find_hardware(target.name);
    if (!hardware) require_link(args, target.name);
    link = hardware->interconnect;
  }
  const model::LinkSpec spec = model::load_link(link);
  model::DataParallel world;
  world.ranks = args.gpus;
  world.zero_stage = zero_stage;
  world.link_name = spec.name;
  world.link = spec.fit;
  model::set_data_parallel(target, world);
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

double static_bytes_per_gpu(const model::LayerModel& model, const model::DataParallel& world) {
  return model::shard(model::whole_static(model), world.ranks, world.zero_stage).total();
}

std::vector<int> zero_stages(const DataParallelArgs& args, bool chooses_stage) {
  if (args.zero) return {*args.zero};
  if (chooses_stage && args.gpus > 1) return {0, 1, 2, 3};
  return {0};
}

}  // namespace papaya::cli
