#include "executor/session.h"

#include "executor/device.h"
#include "executor/distributed/data_parallel.h"
#include "executor/distributed/pipeline_parallel.h"
#include "executor/distributed/shards.h"
#include "executor/layout_probe.h"
#include "executor/optimizer.h"
#include "model/error.h"

namespace papaya::executor {
namespace {

std::unique_ptr<DataSource> make_data(const model::NetworkConfig& config, const torch::Device& device,
                                      const SessionOptions& options) {
  auto data = options.data.empty() ? make_synthetic_data(config, device, options.seed)
                                   : make_file_data(options.data, config, device, options.seed);
  return options.world ? rank_slice(std::move(data), *options.world) : std::move(data);
}

std::shared_ptr<Network> make_network(const NetworkSource& source, const torch::Device& device, const Precision& precision,
                                      const SessionOptions& options) {
  if (source.config().family == model::Family::torchscript && (precision.dtype != torch::kFloat || precision.autocast)) {
    throw InputError(source.config().name + ": a TorchScript network trains in fp32 (its layers' precision is its own code's)");
  }
  torch::manual_seed(options.seed);
  auto network = source.build();
  network->to(device);
  if (options.tensor_group) network->split_tensors(options.tensor_group);  // every rank built the whole alike
  network->set_precision(precision);  // after the split: an FP8 recipe converts each rank's share
  return network;
}

// What this process's optimizer steps: a pipeline stage's layers' weights,
// or every trained weight, or a ZeRO rank's shard of them.
std::vector<torch::Tensor> trained_here(const Network& network, const SessionOptions& options) {
  const std::vector<torch::Tensor> mine =
      options.stages ? stage_parameters(network, options.stages->rank, options.stages->size) : network.trainable_parameters();
  if (!options.world || options.zero == 0) return mine;
  return shard_of(mine, options.world->size, options.world->rank, options.zero);
}

}  // namespace

Session::Session(const NetworkSource& source, const SessionOptions& options)
    : config(source.config()),
      device(resolve_device(options.device)),
      precision(resolve_precision(options.precision, device)),
      data(make_data(config, device, options)),
      memory(device, options.counted),
      network(make_network(source, device, precision, options)),
      layout(probe_layout(*network)),
      trained(trained_here(*network, options)),
      optimizer(make_optimizer(*network, options.lr, options.weight_decay, trained)) {}

}  // namespace papaya::executor
