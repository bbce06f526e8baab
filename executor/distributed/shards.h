#pragma once
// How ZeRO cuts the parameters a data-parallel rank trains: laid end to end
// in the network's order and cut into runs of equal elements (to one), one a
// rank, through a parameter where a cut falls, as Megatron-LM's distributed
// optimizer and DeepSpeed cut their flat buffers. Rank r's run is its shard:
// AdamW's state for it (ZeRO-1), the means of its gradients (ZeRO-2) and,
// between uses, its weights (ZeRO-3) — the even split the model prices
// (model/parallel/sharding.h).
#include <torch/torch.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "executor/distributed/gradient_buckets.h"

namespace papaya::executor {

// The part of one parameter (`parameter`, an index) in one rank's run.
struct ShardSpan {
  size_t parameter = 0;
  int64_t begin = 0, numel = 0;  // of the parameter's elements, flat
  int owner = 0;
};
// Every rank's spans, in the parameters' order. Throws std::logic_error for
// a parameter that is not contiguous (its elements are cut flat).
std::vector<ShardSpan> shard_spans(const std::vector<torch::Tensor>& parameters, int ranks);

// A gradient bucket's buffer cut where the shards' owner changes: each run's
// offset and length in the buffer, its owner, and its spans (each with the
// index of its parameter in the bucket).
struct BucketRun {
  int64_t offset = 0, numel = 0;
  int owner = 0;
  std::vector<std::pair<size_t, ShardSpan>> spans;
};
// `bucket` holds some of `parameters`, the ones the spans index.
std::vector<BucketRun> bucket_runs(const GradientBucket& bucket, const std::vector<torch::Tensor>& parameters,
                                   const std::vector<ShardSpan>& spans);

// Rank `rank`'s shard as AdamW steps it under ZeRO `stage` (1-3), a flat
// tensor a span, in the spans' order: under ZeRO-1 views of the parameters,
// each with the same view of its parameter's gradient (allocated here where
// missing); under ZeRO-2 views of the parameters, each with a gradient of its
// own (zeros), where the ranks' means are added; under ZeRO-3 likewise, but
// copies of the values apart where the parameter's storage is let go
// between uses (owns_its_storage), to be made rank 0's values with the rest.
std::vector<torch::Tensor> shard_of(const std::vector<torch::Tensor>& parameters, int ranks, int rank, int stage);

}  // namespace papaya::executor
