#pragma once
// What each of N data-parallel ranks holds of a network's static state by
// ZeRO stage: stage 0 (plain data parallelism) all of it on every rank; 1
// the optimizer's state split N ways; 2 the gradients too; 3 the weights too.
// And what a rank holds for the exchange itself.
namespace papaya::model {

struct RankStatic {
  double weights = 0, gradients = 0, optimizer = 0;
  double total() const { return weights + gradients + optimizer; }
  // Of these, `weight_share` of the weights and `trained_share` of the
  // gradients and optimizer state (a rank's or a stage's layers').
  RankStatic share(double weight_share, double trained_share) const {
    return {weights * weight_share, gradients * trained_share, optimizer * trained_share};
  }
};

// One process's static bytes taken apart: weights of `parameter_bytes`,
// gradients of the `trainable_bytes` among them (the same share of the
// weights, all of them unless fine-tuning freezes some; the two together at
// most `static_bytes`: a tied weight is counted once), the rest the
// optimizer's state (fp32 AdamW: 4 + 4 + 8 bytes a trained parameter).
RankStatic whole_static(double parameter_bytes, double trainable_bytes, double static_bytes);

// What each of `ranks` holds of `whole`. Throws InputError for a stage
// outside 0-3 or fewer than one rank.
RankStatic shard(const RankStatic& whole, int ranks, int zero_stage);

// Bytes a rank holds for the exchange beyond its static share, all step:
// stages 0 and 1 a flat copy of the gradients, the buckets allreduced (as
// papaya's DataParallel and PyTorch's DDP keep them); stages 2 and 3 two
// buckets in flight (one filling, one being reduced). ZeRO-3's gathered
// weights depend on the point of the step (data_parallel.h).
double exchange_buffer_bytes(const RankStatic& whole, int ranks, int zero_stage, double bucket_bytes);

}  // namespace papaya::model
