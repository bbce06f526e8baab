#pragma once
// PAPAYA's global model (README, `papaya fit --measurements`), fitted per series of measured runs
// (one network, precision and strategy on one GPU):
//   peak memory     M(b) = alpha*b + beta, above a floor: max(floor, alpha*b + beta)
//   iteration time  T(b) = gamma*b + delta, and the later form max(a, k*b) + c
//   throughput      b / T(b)
// then the largest batch b* that fits the budget, the best throughput at a
// batch <= b*, and whether the strategy helps against the series without one
// (strategy `none`) of the same GPU, GPU count, network and precision.
// The memory floor is the later form applied to memory: where a series has
// 4 peaks or more, a batch-independent peak (an optimizer step, a workspace)
// may dominate at small batches, as in the Swin-L runs; the floor is beta
// (no plateau) where there is none.
#include <optional>
#include <string>
#include <vector>

#include "model/curves.h"
#include "model/fit/measurements.h"

namespace papaya::model {

// The series every other strategy is compared with.
inline constexpr char kBaselineStrategy[] = "none";

struct Verdict {
  // The decision: the strategy's best throughput within the budget (from the
  // fitted time model at a batch <= its b*) is higher than the baseline's.
  std::optional<bool> helps;
  // PAPAYA's analytic condition (alpha - alpha')/(gamma' - gamma) > (M - beta)/delta,
  // from the linear fits alone. It assumes the strategy keeps beta and delta
  // and ignores OOM rows, so it can disagree with `helps`.
  std::optional<bool> helps_analytic;
  std::optional<double> baseline_best_samples_per_s;
  std::string note;  // why a part could not be decided
  // The baseline's best run; where neither series has a largest batch (runs
  // with no peak and no OOM: PAPAYA's multi-GPU rows), `helps` compares the
  // best runs instead of the time models.
  std::optional<double> baseline_best_measured_samples_per_s;
};

struct SeriesFit {
  std::string gpu;
  int gpus = 1;  // data-parallel, the batch on each
  std::string network, precision, strategy;
  double budget_bytes = 0;
  int points = 0;                         // runs that did not run out of memory
  int memory_points = 0;                  // of those, with a peak
  int batches = 0;                        // distinct batches among them
  std::optional<int> smallest_batch;      // the smallest of them
  std::optional<int> smallest_oom_batch;  // above every batch that ran

  // Bytes: max(a, k*b) + c, that is alpha = k (per sample), beta = c,
  // floor = a + c; a = 0 (a line) under 4 peaks.
  std::optional<RobustFit<SaturatingCurve>> memory;
  std::optional<RobustFit<LinearCurve>> time_linear;   // seconds: gamma per sample, delta fixed
  std::optional<RobustFit<SaturatingCurve>> time_max;  // seconds: max(a, k*b) + c

  std::optional<int> max_batch;              // b*
  std::string max_batch_limit;               // what sets b*: "memory" or "oom"
  std::optional<int> best_batch;             // from the smallest batch that ran up to b*
  std::optional<double> best_samples_per_s;  // from the time model
  std::optional<int> best_measured_batch;
  std::optional<double> best_measured_samples_per_s;  // among runs at a batch <= b* (every run without a b*)

  std::optional<Verdict> verdict;  // absent for `none` itself
  std::vector<std::string> notes;  // what was not fitted and why; odd rows
  // The runs it was fitted from, so that it can be fitted again for another
  // budget (model/fit/global_predict.h); absent from files written before a
  // global model kept them.
  std::optional<MeasuredSeries> measured;

  // Its best samples/s over the baseline's (1 for the baseline itself): of
  // the time models where both have one, else of the best runs where neither
  // has a largest batch (`from_runs`).
  struct Ratio {
    double value = 1;
    bool from_runs = false;
  };
  std::optional<Ratio> versus_baseline() const;

  // Of the time model that predicts throughput: the max form where it was
  // fitted (4 points or more), else the line.
  std::optional<double> r2_time() const;
  double iteration_s(double batch) const;  // needs a time model
  // The time model is read from the smallest batch that ran (or `limit`,
  // where that is below it) up to `limit`, never below the runs.
  int lowest_batch(int limit) const;
  // The batches in lowest_batch(limit)..limit where b / T(b) can be largest:
  // T is linear on each side of the knee of max(a, k*b) + c, so the ends and
  // the batches either side of the knee.
  std::vector<double> rate_candidates(int limit) const;
};

struct GlobalModel {
  std::string source;
  std::optional<double> budget_bytes;  // given; otherwise each series' GPU memory
  std::vector<SeriesFit> series;
};

// Fits every series. b* = floor((budget - beta) / alpha), 0 where the floor
// is above the budget. Where the budget does not exceed the GPU's memory, b*
// also stays below the series' smallest OOM batch (those runs had the GPU's
// whole memory). An OOM row below a batch that ran bounds nothing (the larger
// batch fitted); it is reported in the notes. A series on a GPU outside the
// catalog needs `budget_bytes` (an InputError naming its first line
// otherwise), and its OOM runs always bound b*.
GlobalModel fit_global(const Measurements& measurements, std::optional<double> budget_bytes);

}  // namespace papaya::model
