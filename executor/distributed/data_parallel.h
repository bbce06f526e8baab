#pragma once
// Data parallelism over Collectives: every rank starts from rank 0's
// parameters, trains on its slice of the global batch and, before each
// optimizer step, averages the gradients over the ranks in buckets of about
// `bucket_bytes` (in backward's order: the last layers' first), so every
// rank takes the same step.
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "executor/data.h"
#include "executor/distributed/collectives.h"
#include "executor/distributed/gradient_buckets.h"
#include "executor/networks/network.h"

namespace papaya::executor {

class DataParallel {
 public:
  // Over `parameters`: a network's trained ones, or a pipeline stage's.
  DataParallel(Collectives& collectives, const std::vector<torch::Tensor>& parameters, int64_t bucket_bytes = int64_t{25} << 20);
  ~DataParallel();  // removes its gradient hooks
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  // Every rank's parameters made rank 0's.
  void broadcast_parameters();
  // Every gradient made the mean of the ranks' (an unused parameter's: 0).
  // A bucket whose gradients backward has all produced was sent off then,
  // while backward went on (from the second step: the first learns how many
  // gradients each bucket receives); this waits for those and exchanges the
  // rest.
  void average_gradients();
  // Of the last exchange's buckets, how many backward sent off itself.
  int sent_during_backward() const { return sent_during_backward_; }
  int bucket_count() const { return static_cast<int>(buckets_.size()); }
  // ZeRO-1: each rank stepped its shard (shard_of); every rank's parameters
  // made the owners', shard by shard.
  void gather_shards();

 private:
  // Elements at `offset` of a bucket's buffer, end to end the flat views
  // `pieces` of its parameters, all from one rank's ZeRO-1 shard (`owner`).
  struct Run {
    int64_t offset = 0, numel = 0;
    int owner = 0;
    std::vector<torch::Tensor> pieces;
  };
  struct Bucket : GradientBucket {
    std::vector<Run> shard_runs;      // the bucket, cut where the ZeRO-1 shards' owner changes
    int expected = -1;                // gradients a step brings (-1: not learned yet)
    int arrived = 0;                  // this step's so far
    std::vector<torch::Tensor> flat;  // one buffer: their sum so far, then what is exchanged
    std::optional<Collectives::Pending> pending;
    bool late = false;  // a gradient came after the bucket was sent off
  };
  void gradient_arrived(Bucket& bucket, size_t index, const torch::Tensor& gradient);
  // Every run's elements made its owner's, through the buckets' buffers.
  void broadcast_runs(Bucket& bucket, std::vector<Run>& runs);

  Collectives& collectives_;
  std::vector<Bucket> buckets_;
  std::vector<std::pair<torch::Tensor, unsigned>> hooks_;
  int sent_during_backward_ = 0;
};

// A source whose every batch is this rank's part of the global batch: the
// samples `source` gives one process at batch_size x world.size, split by
// rank (with the same seed on every rank, the single process's samples).
std::unique_ptr<DataSource> rank_slice(std::unique_ptr<DataSource> source, const World& world);

}  // namespace papaya::executor
