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

// How a trainer holds what a trained parameter carries through training.
enum class StateHolding {
  // As the profile measured it: papaya's trainer (and PyTorch's AMP, FSDP2's
  // mixed precision) keeps fp32 weights, gradients and AdamW state, and
  // casts the weights to the half type to compute with.
  measured,
  // Megatron-LM in half precision: the weights in bf16 (fp16), computed with
  // as they are; fp32 main gradients, reduced where they lie (its gradient
  // buffer); the optimizer's fp32 master weights and two moments, 12 bytes
  // a parameter, which its distributed optimizer shards. Frozen weights as
  // measured. In fp32 it holds what the profile measured, its gradients
  // still reduced where they lie.
  megatron,
};

// One process's static bytes taken apart: weights of `parameter_bytes`,
// gradients of the `trainable_bytes` among them (the same share of the
// weights, all of them unless fine-tuning freezes some; the two together at
// most `static_bytes`: a tied weight is counted once), the rest the
// optimizer's state (fp32 AdamW: 4 + 4 + 8 bytes a trained parameter).
RankStatic whole_static(double parameter_bytes, double trainable_bytes, double static_bytes);

// The same as Megatron-LM holds them in half precision (StateHolding::
// megatron): of each trained parameter's fp32 bytes (4) half as weights, as
// many again as its main gradient, three times as many in the optimizer.
RankStatic megatron_static(double parameter_bytes, double trainable_bytes);

// What each of `ranks` holds of `whole`. Throws InputError for a stage
// outside 0-3 or fewer than one rank.
RankStatic shard(const RankStatic& whole, int ranks, int zero_stage);

// Bytes a rank holds for the exchange beyond its static share, all step:
// stages 0 and 1 a flat copy of the gradients, the buckets allreduced (as
// papaya's DataParallel and PyTorch's DDP keep them); stages 2 and 3 two
// buckets in flight (one filling, one being reduced). ZeRO-3's gathered
// weights depend on the point of the step (data_parallel.h). None where
// Megatron-LM holds the state: its gradient buffer is reduced in place.
double exchange_buffer_bytes(const RankStatic& whole, int ranks, int zero_stage, double bucket_bytes, StateHolding holding);

}  // namespace papaya::model
