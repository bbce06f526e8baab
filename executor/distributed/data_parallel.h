#pragma once
// Data parallelism over Collectives: every rank starts from rank 0's
// parameters, trains on its slice of the global batch and, before each
// optimizer step, averages the gradients over the ranks in buckets of about
// `bucket_bytes` (in backward's order: the last layers' first), so every
// rank takes the same step.
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "executor/data.h"
#include "executor/distributed/collectives.h"
#include "executor/networks/network.h"

namespace papaya::executor {

class DataParallel {
 public:
  DataParallel(Collectives& collectives, Network& network, int64_t bucket_bytes = int64_t{25} << 20);

  // Every rank's parameters made rank 0's.
  void broadcast_parameters();
  // Every gradient made the mean of the ranks' (an unused parameter's: 0).
  void average_gradients();
  // The mean of `value` over the ranks.
  double mean(double value);
  // ZeRO-1: each rank stepped its shard (shards()); every rank's parameters
  // made the owners', shard by shard.
  void gather_shards();
  // Each rank's `values`, rank by rank: a world.size x values.size() table.
  std::vector<std::vector<double>> gather(const std::vector<double>& values);

 private:
  Collectives& collectives_;
  std::vector<std::vector<torch::Tensor>> shards_;   // by rank (ZeRO-1)
  std::vector<std::vector<torch::Tensor>> buckets_;  // parameters, in backward's order
};

// The parameters in `ranks` contiguous runs of about equal elements: rank
// r's shard of the optimizer's state under ZeRO-1.
std::vector<std::vector<torch::Tensor>> shards(const Network& network, int ranks);

// A source whose every batch is this rank's part of the global batch: the
// samples `source` gives one process at batch_size x world.size, split by
// rank (with the same seed on every rank, the single process's samples).
std::unique_ptr<DataSource> rank_slice(std::unique_ptr<DataSource> source, const World& world);

}  // namespace papaya::executor
