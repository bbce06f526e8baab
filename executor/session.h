#pragma once
// A network set up to be trained or profiled, in the order that makes the
// allocator's figures right: the data source first (its fixed templates are
// not a step's memory), then the memory tracker, then the network, seeded,
// on the device in its precision (its weights count), its layout, and AdamW
// with its state allocated. `papaya train` and the profiler both start here.
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "executor/data.h"
#include "executor/distributed/world.h"
#include "executor/memory.h"
#include "executor/networks/network.h"
#include "executor/networks/network_source.h"
#include "executor/precision.h"
#include "executor/trainer.h"
#include "model/catalog/network_config.h"
#include "model/network_layout.h"

namespace papaya::executor {

struct SessionOptions {
  std::string device = "cpu";      // cpu, cuda, cuda:N
  std::string precision = "fp32";  // fp32, bf16, amp-bf16, amp-fp16
  std::string data;                // a file (make_file_data); "": synthetic data
  std::optional<World> world;      // a data-parallel rank: its slice of each global batch
  int zero = 0;                    // 1-3: with `world`, AdamW steps this rank's shard only (ZeRO)
  // A pipeline stage of so many: it holds and steps its own layers' weights
  // (of which, with `world` and ZeRO-1, its shard), every stage of a
  // pipeline drawing the same batch.
  std::optional<World> stages;
  // This rank's tensor-parallel group, whose ranks draw the same batch,
  // each holding its share of every split layer (Network::split_tensors,
  // before AdamW's state is made).
  std::shared_ptr<TensorGroup> tensor_group;
  uint64_t seed = 0;                            // of the weights and the data
  Counted counted = Counted::allocator_blocks;  // what the memory tracker's bytes are on CUDA
  double lr = TrainOptions().lr;                // AdamW's
  double weight_decay = TrainOptions().weight_decay;
};

// The members in the order they are made, the network built by `source`.
// Throws InputError for a device, precision or data file that cannot be had.
struct Session {
  Session(const NetworkSource& source, const SessionOptions& options);

  const model::NetworkConfig config;
  const torch::Device device;
  const Precision precision;
  const std::unique_ptr<DataSource> data;
  MemoryTracker memory;
  const std::shared_ptr<Network> network;
  const model::NetworkLayout layout;  // probe_layout(*network)
  // What AdamW steps: every trained weight, a pipeline stage's, or a ZeRO
  // rank's shard of them (shard_of: flat spans of the weights).
  const std::vector<torch::Tensor> trained;
  const std::unique_ptr<torch::optim::AdamW> optimizer;
};

}  // namespace papaya::executor
