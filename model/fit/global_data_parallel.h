#pragma once
// PAPAYA's global model of one GPU (global_fit.h) carried to N data-parallel
// GPUs over a link: what the per-layer model does on its timeline
// (data_parallel.h), in the global model's terms. Each GPU runs the one-GPU
// step at its batch b; the gradients (G bytes) are allreduced over the link
// in buckets as backward makes them, so the exchange hides behind backward,
// a share h of the step, but for its last bucket:
//   T_N(b) = T_1(b) + max(X_last, X - h * T_1(b))
// with X the allreduce of G over N GPUs and X_last that of the last bucket;
// h = 2/3 (backward is about twice forward) and 3/4 where the strategy
// recomputes (forward again inside backward: the paper's point). Each GPU
// also holds the buckets' copy of the gradients: b* shrinks by G / alpha.
// Samples/s are of all N GPUs: N * b / T_N(b), best at a batch <= b*.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/fit/global_fit.h"
#include "model/parallel/data_parallel.h"
#include "model/parallel/link.h"

namespace papaya::model {

// The share of a step that hides the exchange under `strategy` (PAPAYA's
// names: "checkpoint", "quantize4+checkpoint" recompute).
double backward_share(const std::string& strategy);

struct ScaledSeries {
  std::string network, precision, strategy;
  int gpus = 1;
  std::optional<int> max_batch;                    // per GPU
  std::optional<int> best_batch;                   // per GPU
  std::optional<double> best_samples_per_s;        // of all GPUs
  std::optional<double> versus_baseline;           // over `none`'s, predicted at the same GPUs
  std::optional<double> measured_versus_baseline;  // the measured series', where `fitted` has one
  std::string note;
};

// Every one-GPU series of `fitted` whose network has gradient bytes in
// `gradient_bytes`, at each count of `gpus`, over `link`.
std::vector<ScaledSeries> scale_to_gpus(const GlobalModel& fitted, const std::map<std::string, double>& gradient_bytes,
                                        const LinkFit& link, const std::vector<int>& gpus,
                                        double bucket_bytes = default_bucket_bytes);

}  // namespace papaya::model
