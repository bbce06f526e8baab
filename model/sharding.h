#pragma once
// What each of N data-parallel ranks holds of a network's static state by
// ZeRO stage, in fp32 AdamW training's 16 bytes a parameter (4 of weights,
// 4 of gradients, 8 of AdamW's two moments): stage 0 (plain data
// parallelism) all of it on every rank; 1 the moments split N ways; 2 the
// gradients too; 3 the weights too. Transients (gradient buckets, ZeRO-3's
// gathered layer) are not static and not here.
namespace papaya::model {

struct RankStatic {
  double weights = 0, gradients = 0, optimizer = 0;
  double total() const { return weights + gradients + optimizer; }
};

// Throws InputError for a stage outside 0-3 or fewer than one rank.
RankStatic rank_static(double parameters, int ranks, int zero_stage);

}  // namespace papaya::model
