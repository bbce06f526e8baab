#include "model/layout_pricing/layout_search.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <functional>
#include <map>
#include <thread>
#include <tuple>

#include "model/error.h"

namespace papaya::model {
namespace {

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int k = 1; k <= n; ++k) {
    if (n % k == 0) out.push_back(k);
  }
  return out;
}

std::vector<int> choices(const std::optional<int>& fixed, const std::vector<int>& all) {
  return fixed ? std::vector<int>{*fixed} : all;
}

constexpr double tokens_a_batch = 4.0 * 1024 * 1024;

bool recomputes(const std::string& plan) { return plan.find("recompute") != std::string::npos; }

// What a layout adds to plain data parallelism under keep, each a part
// that can go wrong or cost more than the model sees.
std::vector<std::string> moving_parts(const LayoutEstimate& e) {
  const ParallelLayout& l = e.layout;
  std::vector<std::string> parts;
  if (l.tensor > 1) parts.push_back("tensor parallelism");
  if (l.context > 1) parts.push_back("context parallelism");
  if (l.pipeline > 1) parts.push_back("pipeline stages");
  if (l.virtual_stages > 1) parts.push_back("interleaved stages");
  if (l.expert > 1) parts.push_back("expert parallelism");
  if (l.offload_optimizer) parts.push_back("the optimizer offloaded");
  if (recomputes(e.plan)) parts.push_back(e.plan);
  return parts;
}

std::string percent(double fraction) { return std::to_string(static_cast<int>(std::lround(100 * fraction))) + " %"; }

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) out += (i == 0 ? "" : i + 1 == words.size() ? " and " : ", ") + words[i];
  return out;
}

// Puts the simplest of the layouts within the tolerance of the fastest
// (best[0]) first, and says why it leads.
std::string choose_simplest(std::vector<LayoutEstimate>& best) {
  const LayoutEstimate& fastest = best.front();
  size_t chosen = 0;
  for (size_t i = 1; i < best.size(); ++i) {
    if (best[i].tokens_per_s < fastest.tokens_per_s * (1 - layout_time_tolerance)) break;
    if (moving_parts(best[i]).size() < moving_parts(best[chosen]).size()) chosen = i;
  }
  const std::string within = "within " + percent(layout_time_tolerance) + " of it";
  if (chosen == 0) {
    const std::vector<std::string> parts = moving_parts(fastest);
    return "the fastest that fits" + (parts.empty() ? std::string(", with no model parallelism and no recompute")
                                                    : "; nothing " + within + " does without " + joined(parts));
  }
  // The parts of one layout the other has not.
  const auto beyond = [](const std::vector<std::string>& parts, const std::vector<std::string>& of) {
    std::vector<std::string> out;
    for (const std::string& part : parts) {
      if (std::find(of.begin(), of.end(), part) == of.end()) out.push_back(part);
    }
    return out;
  };
  const std::vector<std::string> fastest_parts = moving_parts(fastest), chosen_parts = moving_parts(best[chosen]);
  const std::vector<std::string> spared = beyond(fastest_parts, chosen_parts), added = beyond(chosen_parts, fastest_parts);
  const double faster = fastest.tokens_per_s / best[chosen].tokens_per_s - 1;
  std::string why = "the fastest, " + fastest.layout.label() + " under " + fastest.plan + ", is " + percent(faster) +
                    " faster: within the model's error (" + percent(layout_time_tolerance) + "), so the simpler one leads";
  if (!added.empty()) {
    why += ", with " + joined(added) + " instead of " + joined(spared);
  } else if (!spared.empty()) {
    why += ", without " + joined(spared);
  }
  std::rotate(best.begin(), best.begin() + static_cast<std::ptrdiff_t>(chosen),
              best.begin() + static_cast<std::ptrdiff_t>(chosen) + 1);
  return why;
}

}  // namespace

int default_workers() { return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u)); }

int default_global_batch(int tokens, int multiple) {
  const int samples = std::max(1, static_cast<int>(std::lround(tokens_a_batch / std::max(1, tokens))));
  return (samples + multiple - 1) / multiple * multiple;
}

namespace {

// One (t, c, p, v, e) of the search, and what pricing it found.
struct Candidate {
  int tensor = 1, context = 1, pipeline = 1, virtual_stages = 1, expert = 1;
  std::vector<LayoutEstimate> fits;
  std::optional<LayoutEstimate> nearest;
  int priced = 0, pruned = 0, skipped = 0;
  std::optional<std::string> first_reason;  // check_layout's, where a layout of it was not valid
  std::exception_ptr failed;
};

// Prices a candidate's ZeRO stages, offloading, micro-batches and plans on
// a worker of the pricer; a micro-batch whose time floor leaves fewer
// tokens/s than `slower` (0: none) is skipped, as it cannot be in the answer.
void price_candidate(const LayoutPricer& pricer, const LayoutQuestion& q, int global, double slower, Candidate& found,
                     int worker) {
  const TransformerShape& shape = pricer.shape();
  const auto valid = [&](const ParallelLayout& l) {
    try {
      check_layout(l, shape, q.gpus);
      return true;
    } catch (const InputError& e) {
      if (!found.first_reason) found.first_reason = e.what();
      return false;
    }
  };
  ParallelLayout l;
  l.tensor = found.tensor, l.context = found.context, l.pipeline = found.pipeline;
  l.virtual_stages = found.virtual_stages, l.expert = found.expert;
  const int p = l.pipeline, d = q.gpus / (l.tensor * l.context * p);
  l.data = d;
  l.sequence = q.sequence.value_or(l.tensor > 1);
  l.micro_batch = 1;
  l.micro_batches = std::max(1, global / d);
  if (!valid(l)) return;
  // The ZeRO stages and offloading that might fit: their weights, gradients and optimizer state do.
  std::vector<std::pair<int, bool>> variants;
  for (int zero : choices(q.zero_stage, q.zero_stages)) {
    if (d * l.context == 1 && zero > 0) continue;  // nothing to shard over
    const std::vector<bool> offloads = q.offload_optimizer    ? std::vector<bool>{*q.offload_optimizer}
                                       : pricer.can_offload() ? std::vector<bool>{false, true}
                                                              : std::vector<bool>{false};
    for (bool offload : offloads) {
      l.zero_stage = zero, l.offload_optimizer = offload;
      if (!valid(l)) continue;
      if (pricer.static_floor(l, worker) > q.budget_bytes) {
        ++found.pruned;
      } else {
        variants.emplace_back(zero, offload);
      }
    }
  }
  // A plan and variant that does not fit a micro-batch does not
  // fit a larger one either (larger micro-batches hold more), so
  // it is priced no more for this layout.
  std::vector<std::vector<bool>> too_large(q.plans.size(), std::vector<bool>(variants.size(), false));
  // Without accumulation one stage's micro-batch is its whole share of the batch.
  const std::vector<int> micro_batches =
      p == 1 && !q.accumulates ? std::vector<int>{std::max(1, global / d)} : std::vector<int>{1, 2, 4, 8, 16, 32};
  for (int mb : choices(q.micro_batch, micro_batches)) {
    if (variants.empty() || global % (mb * d) != 0) continue;
    if (p == 1 && !q.accumulates && global != mb * d) continue;
    l.micro_batch = mb;
    l.micro_batches = global / (mb * d);
    l.zero_stage = variants.front().first, l.offload_optimizer = variants.front().second;
    if (!valid(l)) continue;
    if (slower > 0) {
      // A hair under the floor, so that rounding never skips a layout as fast as `slower`.
      const double most = global * static_cast<double>(shape.tokens) / (pricer.time_floor_seconds(l, worker) * (1 - 1e-6));
      if (most < slower) {
        ++found.skipped;
        continue;  // not break: a larger micro-batch may be faster
      }
    }
    // The plans in turn, each adding to keep's time: the first under which some variant fits.
    bool any_fits = false;
    for (size_t plan = 0; plan < q.plans.size(); ++plan) {
      for (size_t variant = 0; variant < variants.size(); ++variant) {
        if (too_large[plan][variant]) continue;
        std::tie(l.zero_stage, l.offload_optimizer) = variants[variant];
        LayoutEstimate estimate = pricer.estimate(l, q.plans[plan], worker);
        ++found.priced;
        if (estimate.peak_bytes <= q.budget_bytes) {
          any_fits = true;
          found.fits.push_back(std::move(estimate));
        } else {
          too_large[plan][variant] = true;
          if (!found.nearest || estimate.peak_bytes < found.nearest->peak_bytes) found.nearest = std::move(estimate);
        }
      }
      if (any_fits) break;
    }
    if (!any_fits) break;  // larger micro-batches hold more
  }
}

// The (t, c, p, v, e) of the GPUs in the order the search weighs them (ties go to the first).
std::vector<Candidate> candidates(const LayoutPricer& pricer, const LayoutQuestion& q) {
  const TransformerShape& shape = pricer.shape();
  const int per_node = pricer.request().links.gpus_per_node;
  std::vector<int> tensors;
  for (int t : divisors(q.gpus)) {
    if (t <= per_node || q.tensor) tensors.push_back(t);
  }
  std::vector<Candidate> out;
  for (int t : choices(q.tensor, tensors)) {
    for (int c : choices(q.context, divisors(q.gpus / std::max(1, t)))) {
      if (q.gpus % (t * c) != 0) continue;
      for (int p : choices(q.pipeline, divisors(q.gpus / (t * c)))) {
        if (q.gpus % (t * c * p) != 0) continue;
        std::vector<int> chunk_counts{1};
        if (p > 1) chunk_counts = {1, 2, 4};
        for (int v : choices(q.virtual_stages, chunk_counts)) {
          if (q.even_stages && shape.blocks % (p * v) != 0) continue;
          std::vector<int> experts{1};
          if (shape.experts > 0) experts = divisors(shape.experts);
          for (int e : choices(q.expert, experts)) {
            Candidate one;
            one.tensor = t, one.context = c, one.pipeline = p, one.virtual_stages = v, one.expert = e;
            out.push_back(std::move(one));
          }
        }
      }
    }
  }
  return out;
}

// The tokens/s below which a layout is neither among the `keep` fastest nor
// within layout_time_tolerance of the fastest, given the rates of layouts
// that fit (most first, at most `keep`); 0 while fewer than `keep` are known.
double slower_than_the_answer(const std::vector<double>& fastest, size_t keep) {
  if (fastest.empty() || fastest.size() < keep) return 0;
  return std::min(fastest[keep - 1], (1 - layout_time_tolerance) * fastest.front());
}

// Adds the rates of a candidate's fits to `fastest` (most first, at most `keep`).
void add_rates(const Candidate& c, size_t keep, std::vector<double>& fastest) {
  for (const LayoutEstimate& fit : c.fits) fastest.push_back(fit.tokens_per_s);
  std::sort(fastest.begin(), fastest.end(), std::greater<>());
  if (fastest.size() > keep) fastest.resize(keep);
}

// Prices the candidates on up to `workers` threads, each a worker of the
// pricer. A unit of work is the candidates of one (t, c, p, e), whose
// interleavings share their pipeline stages; units are handed out in order,
// a round of them at a time. Each round skips what the rounds before it
// found too slow to be in the answer (of `keep`): the same on any number
// of threads, as a round's units see only the rounds before.
void price_candidates(const LayoutPricer& pricer, const LayoutQuestion& q, int global, size_t keep, std::vector<Candidate>& all,
                      int workers) {
  std::vector<std::vector<size_t>> units;
  std::map<std::tuple<int, int, int, int>, size_t> unit_of;
  for (size_t i = 0; i < all.size(); ++i) {
    const Candidate& c = all[i];
    const auto [at, added] = unit_of.emplace(std::tuple{c.tensor, c.context, c.pipeline, c.expert}, units.size());
    if (added) units.emplace_back();
    units[at->second].push_back(i);
  }
  constexpr size_t units_a_round = 16;
  std::vector<double> fastest;
  std::atomic<bool> stop{false};
  for (size_t first = 0; first < units.size() && !stop; first += units_a_round) {
    const size_t end = std::min(units.size(), first + units_a_round);
    const double slower = slower_than_the_answer(fastest, keep);
    std::atomic<size_t> next{first};
    const auto work = [&](int worker) {
      for (size_t u = next++; u < end && !stop; u = next++) {
        for (size_t i : units[u]) {
          try {
            price_candidate(pricer, q, global, slower, all[i], worker);
          } catch (...) {
            all[i].failed = std::current_exception();
            stop = true;  // the units before this one finish: the first failure in order is rethrown
            break;
          }
        }
      }
    };
    const int threads = std::clamp(workers, 1, static_cast<int>(end - first));
    std::vector<std::thread> helpers;
    for (int w = 1; w < threads; ++w) helpers.emplace_back(work, w);
    work(0);
    for (std::thread& helper : helpers) helper.join();
    for (size_t u = first; u < end; ++u) {
      for (size_t i : units[u]) add_rates(all[i], keep, fastest);
    }
  }
}

}  // namespace

LayoutAnswer search_layouts(const LayoutPricer& pricer, const LayoutQuestion& q, size_t keep) {
  const TransformerShape& shape = pricer.shape();
  LayoutAnswer answer;
  int fixed = 1;
  for (const auto& [degree, name] : {std::pair{q.tensor, "tensor"}, {q.context, "context"}, {q.pipeline, "pipeline"}}) {
    if (!degree) continue;
    fixed *= *degree;
    if (*degree < 1 || q.gpus % fixed != 0) {
      throw InputError("layout: " + std::string(name) + " parallelism " + std::to_string(*degree) +
                       " with the degrees fixed before it (" + std::to_string(fixed) + " GPUs) does not divide " +
                       std::to_string(q.gpus) + " GPUs");
    }
  }
  const int global = q.global_batch > 0 ? q.global_batch : default_global_batch(shape.tokens, q.gpus);
  std::vector<Candidate> all = candidates(pricer, q);
  price_candidates(pricer, q, global, std::max<size_t>(1, keep), all, q.workers > 0 ? q.workers : default_workers());
  // As one thread would have found them, in the order weighed.
  std::optional<std::string> first_reason;
  for (Candidate& c : all) {
    if (c.failed) std::rethrow_exception(c.failed);
    if (!first_reason) first_reason = c.first_reason;
    answer.priced += c.priced, answer.pruned += c.pruned, answer.skipped += c.skipped;
    for (LayoutEstimate& fit : c.fits) answer.best.push_back(std::move(fit));
    if (c.nearest && (!answer.nearest || c.nearest->peak_bytes < answer.nearest->peak_bytes))
      answer.nearest = std::move(c.nearest);
  }
  if (answer.priced == 0 && answer.pruned == 0) {
    throw InputError(first_reason ? *first_reason : "layout: no layout of " + std::to_string(q.gpus) + " GPUs");
  }
  // Ties (to rounding) in the order found: fewer GPUs on the context, and smaller micro-batches, first.
  std::stable_sort(answer.best.begin(), answer.best.end(),
                   [](const LayoutEstimate& a, const LayoutEstimate& b) { return a.tokens_per_s > b.tokens_per_s * (1 + 1e-9); });
  if (!answer.best.empty()) answer.why = choose_simplest(answer.best);
  if (answer.best.size() > keep) answer.best.resize(keep);
  if (!answer.best.empty()) answer.nearest.reset();
  return answer;
}

}  // namespace papaya::model
