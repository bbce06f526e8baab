#include "model/fit/global_data_parallel.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace papaya::model {
namespace {

// The largest batch per GPU with the buckets' copy of the gradients beside
// the step: b* less G / alpha (b* from memory or from an OOM run alike).
std::optional<int> max_batch_on_gpus(const SeriesFit& one, double gradients, std::string& note) {
  if (!one.max_batch) return std::nullopt;
  if (!one.memory || one.memory->curve.per_sample <= 0) {
    note = "no memory fit: b* as on one GPU, without the buckets' copy of the gradients";
    return one.max_batch;
  }
  const double fewer = std::ceil(gradients / one.memory->curve.per_sample);
  return std::max(0, *one.max_batch - static_cast<int>(fewer));
}

}  // namespace

double backward_share(const std::string& strategy) {
  return strategy.find("checkpoint") != std::string::npos || strategy.find("recompute") != std::string::npos ? 3.0 / 4 : 2.0 / 3;
}

std::vector<ScaledSeries> scale_to_gpus(const GlobalModel& fitted, const std::map<std::string, double>& gradient_bytes,
                                        const LinkFit& link, const std::vector<int>& gpus, double bucket_bytes) {
  std::vector<ScaledSeries> out;
  for (const int n : gpus) {
    const size_t first = out.size();
    for (const SeriesFit& one : fitted.series) {
      const auto g = gradient_bytes.find(one.network);
      if (one.gpus != 1 || g == gradient_bytes.end()) continue;
      ScaledSeries s{one.network, one.precision, one.strategy, n};
      s.max_batch = max_batch_on_gpus(one, g->second, s.note);
      const double all = link.seconds(g->second, n), last = link.seconds(std::min(g->second, bucket_bytes), n);
      const double share = backward_share(one.strategy);
      if (s.max_batch && *s.max_batch >= 1 && one.time_linear) {
        // The exposed exchange is X - h T(b) up to the batch where it falls to
        // the last bucket's, that after: one more break in the step's line.
        std::vector<double> candidates = one.rate_candidates(*s.max_batch);
        const int lowest = one.lowest_batch(*s.max_batch);
        int lo = lowest, hi = *s.max_batch;  // the first batch whose exposed exchange is the last bucket's
        while (lo < hi) {
          const int mid = lo + (hi - lo) / 2;
          if (all - share * one.iteration_s(mid) <= last) {
            hi = mid;
          } else {
            lo = mid + 1;
          }
        }
        candidates.insert(candidates.end(), {static_cast<double>(lo - 1), static_cast<double>(lo)});
        for (const double b : candidates) {
          const double t = b >= lowest && b <= *s.max_batch ? one.iteration_s(b) : 0;
          if (t <= 0) continue;
          const double rate = n * b / (t + std::max(last, all - share * t));
          if (!s.best_samples_per_s || rate > *s.best_samples_per_s) {
            s.best_samples_per_s = rate;
            s.best_batch = static_cast<int>(b);
          }
        }
      }
      out.push_back(s);
    }
    // Against `none` at the same count: predicted, and measured where the runs are there.
    for (size_t i = first; i < out.size(); ++i) {
      ScaledSeries& s = out[i];
      const auto none = std::find_if(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(), [&](const ScaledSeries& o) {
        return o.network == s.network && o.precision == s.precision && o.strategy == kBaselineStrategy;
      });
      if (none != out.end() && none->best_samples_per_s && s.best_samples_per_s) {
        s.versus_baseline = *s.best_samples_per_s / *none->best_samples_per_s;
      }
      const auto measured = std::find_if(fitted.series.begin(), fitted.series.end(), [&](const SeriesFit& f) {
        return f.gpus == n && f.network == s.network && f.precision == s.precision && f.strategy == s.strategy;
      });
      if (measured == fitted.series.end()) continue;
      if (const auto ratio = measured->versus_baseline()) s.measured_versus_baseline = ratio->value;
    }
  }
  return out;
}

}  // namespace papaya::model
