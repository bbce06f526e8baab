#include "planner/layer_program.h"

#include <algorithm>
#include <limits>

namespace papaya::planner {
namespace {

constexpr double minus_infinity = -std::numeric_limits<double>::infinity();
using Change = model::PlanSpace::Change;

// Where the points of each level are (level_dp.h: the points of level j are
// the forward and backward of layer j and the recompute of the segment
// ending at j). The points of levels >= j are the contiguous indices from
// forward[j] to backward[j].
struct Levels {
  int n = 0;
  std::vector<int> level;                      // per point
  std::vector<CheckSlot> slot;                 // per point
  std::vector<int> forward, backward;          // per layer: its point
  std::vector<int> recompute;                  // per layer: the first recompute point of the segment ending there, or -1

  explicit Levels(const model::PlanSpace& space) {
    const auto& points = space.points();
    for (const auto& p : points) n += p.phase == model::Phase::forward;
    forward.assign(static_cast<size_t>(n), -1);
    backward.assign(static_cast<size_t>(n), -1);
    recompute.assign(static_cast<size_t>(n), -1);
    for (size_t i = 0; i < points.size(); ++i) {
      const auto& p = points[i];
      const int at = static_cast<int>(i);
      switch (p.phase) {
        case model::Phase::forward:
          forward[static_cast<size_t>(p.layer)] = at;
          level.push_back(p.layer);
          slot.push_back(forward_point);
          break;
        case model::Phase::backward:
          backward[static_cast<size_t>(p.layer)] = at;
          level.push_back(p.layer);
          slot.push_back(backward_point);
          break;
        case model::Phase::recompute: {
          const int last = space.segments()[static_cast<size_t>(p.segment)].last_layer;
          if (recompute[static_cast<size_t>(last)] < 0) recompute[static_cast<size_t>(last)] = at;
          level.push_back(last);
          slot.push_back(recompute_points);
          break;
        }
      }
    }
  }
};

double at(const std::vector<Change>& changes, int point) {
  double bytes = 0;
  for (const Change& c : changes) {
    if (c.from <= point && point <= c.to) bytes += c.bytes;
  }
  return bytes;
}

// The most the changes add at any point from..to.
double most(const std::vector<Change>& changes, int from, int to) {
  double top = at(changes, from);
  for (const Change& c : changes) {
    for (int p : {c.from, c.to + 1}) {
      if (from < p && p <= to) top = std::max(top, at(changes, p));
    }
  }
  return top;
}

// The changes' bytes at every point from..to.
std::vector<double> values(const std::vector<Change>& changes, int from, int to) {
  std::vector<double> diff(static_cast<size_t>(to - from + 2), 0.0);
  for (const Change& c : changes) {
    const int lo = std::max(c.from, from), hi = std::min(c.to, to);
    if (lo > hi) continue;
    diff[static_cast<size_t>(lo - from)] += c.bytes;
    diff[static_cast<size_t>(hi - from + 1)] -= c.bytes;
  }
  double running = 0;
  for (double& d : diff) d = running += d;
  diff.pop_back();
  return diff;
}

// The bytes changes add from `level` on: exactly at `count` levels (into
// `near`), and at most `far` beyond.
template <size_t N>
void place(const std::vector<Change>& changes, const Levels& lv, int level, std::array<SlotBytes, N>& near, double& far) {
  const int count = static_cast<int>(N);
  far = level + count < lv.n ? most(changes, lv.forward[static_cast<size_t>(level + count)], lv.backward[static_cast<size_t>(level + count)]) : 0;
  near = {};
  for (int k = 0; k < count && level + k < lv.n; ++k) {
    const size_t j = static_cast<size_t>(level + k);
    near[static_cast<size_t>(k)][forward_point] = at(changes, lv.forward[j]) - far;
    near[static_cast<size_t>(k)][backward_point] = at(changes, lv.backward[j]) - far;
    if (lv.recompute[j] >= 0) near[static_cast<size_t>(k)][recompute_points] = at(changes, lv.recompute[j]) - far;
  }
}

// One option of one storage, or a combination of them at one level.
struct Priced {
  std::vector<int> options;
  Effect effect;          // objective: without the stall of copies to the host
  double seconds = 0;     // likewise
  double to_host_s = 0;   // link seconds of its copies to the host
};

bool no_worse(const Priced& a, const Priced& b) {
  if (a.effect.objective > b.effect.objective || a.effect.far > b.effect.far || a.to_host_s > b.to_host_s) return false;
  for (size_t k = 0; k < a.effect.near.size(); ++k) {
    for (size_t s = 0; s < 3; ++s) {
      if (a.effect.near[k][s] > b.effect.near[k][s]) return false;
    }
  }
  return true;
}

// Drops every candidate another is no worse than in every respect (of equal
// ones, the first stays, so that keep does).
std::vector<Priced> undominated(std::vector<Priced> all) {
  std::vector<bool> dropped(all.size(), false);
  for (size_t j = 0; j < all.size(); ++j) {
    for (size_t i = 0; i < all.size() && !dropped[j]; ++i) {
      if (i == j || dropped[i] || !no_worse(all[i], all[j])) continue;
      dropped[j] = i < j || !no_worse(all[j], all[i]);
    }
  }
  std::vector<Priced> kept;
  for (size_t j = 0; j < all.size(); ++j) {
    if (!dropped[j]) kept.push_back(std::move(all[j]));
  }
  return kept;
}

Priced combined(const Priced& a, const Priced& b) {
  Priced c = a;
  c.options.insert(c.options.end(), b.options.begin(), b.options.end());
  c.effect.far += b.effect.far;
  for (size_t k = 0; k < c.effect.near.size(); ++k) {
    for (size_t s = 0; s < 3; ++s) c.effect.near[k][s] += b.effect.near[k][s];
  }
  c.effect.objective += b.effect.objective;
  c.seconds += b.seconds;
  c.to_host_s += b.to_host_s;
  return c;
}

}  // namespace

LayerProgram build_program(const model::PlanSpace& space, const VarianceProxy& variance, const ProgramSettings& settings) {
  const Levels lv(space);
  const model::Target& target = space.target();
  const double batch = static_cast<double>(space.batch());
  const auto forward_s = [&](int layer) { return layer < lv.n ? target.forward_seconds[static_cast<size_t>(layer)].at(batch) : 0.0; };
  const auto backward_s = [&](int layer) { return layer < lv.n ? target.backward_seconds[static_cast<size_t>(layer)].at(batch) : 0.0; };
  const auto link_s = [&](double bytes, double rate) { return bytes > 0 ? bytes / rate : 0.0; };

  // What keep needs at every point beyond the budget.
  const std::vector<int> keep_storages(space.storages().size(), 0), no_segments(space.segments().size(), -1);
  const model::Assignment keep = space.assignment(keep_storages, no_segments);
  const std::vector<double> base = space.timeline(keep);
  double highest = minus_infinity;
  for (size_t p = 0; p < base.size(); ++p) {
    if (lv.slot[p] != recompute_points) highest = std::max(highest, base[p]);
  }
  const double unattributed = space.evaluate(keep).peak_bytes - highest;
  std::vector<double> need(base.size());
  for (size_t p = 0; p < base.size(); ++p) {
    need[p] = base[p] + unattributed + (settings.correction.empty() ? 0 : settings.correction[p]) - settings.budget_bytes;
  }

  LayerProgram out;
  out.unattributed_bytes = unattributed;
  Program& program = out.program;
  program.most_needed = *std::max_element(need.begin(), need.end());
  program.levels.resize(static_cast<size_t>(lv.n));
  out.level_storages.resize(static_cast<size_t>(lv.n));
  for (int j = 0; j < lv.n; ++j) {
    program.levels[static_cast<size_t>(j)].need = {need[static_cast<size_t>(lv.forward[static_cast<size_t>(j)])],
                                                   need[static_cast<size_t>(lv.backward[static_cast<size_t>(j)])], 0};
  }

  // Each storage's options, priced, grouped by the layer that saves it first.
  std::vector<std::vector<std::vector<Priced>>> items(static_cast<size_t>(lv.n));
  for (size_t g = 0; g < space.storages().size(); ++g) {
    const auto& storage = space.storages()[g];
    if (storage.slots.empty()) continue;
    const auto options = space.options(static_cast<int>(g));
    if (options.size() < 2) continue;
    int last_user = storage.first_layer;
    for (int i : storage.slots) last_user = std::max(last_user, space.slots()[static_cast<size_t>(i)].layer);
    std::vector<Priced> priced;
    for (size_t o = 0; o < options.size(); ++o) {
      const auto& option = options[o];
      if (option.strategy.swap && !settings.allow_swap) continue;
      Priced p;
      p.options = {static_cast<int>(o)};
      place(space.changes(static_cast<int>(g), static_cast<int>(o)), lv, storage.first_layer, p.effect.near, p.effect.far);
      const double from_host_stall =
          std::max(0.0, link_s(option.host_bytes, target.h2d_bytes_per_s) - backward_s(last_user + 1));
      p.seconds = option.codec_seconds + option.recompute_seconds + from_host_stall;
      p.to_host_s = link_s(option.host_bytes, target.d2h_bytes_per_s);
      p.effect.objective = p.seconds + settings.variance_weight * variance.of_option(static_cast<int>(g), option);
      priced.push_back(std::move(p));
    }
    items[static_cast<size_t>(storage.first_layer)].push_back(undominated(std::move(priced)));
    out.level_storages[static_cast<size_t>(storage.first_layer)].push_back(static_cast<int>(g));
  }

  // Per level, the combinations of its storages' options.
  out.level_options.resize(static_cast<size_t>(lv.n));
  out.level_seconds.resize(static_cast<size_t>(lv.n));
  for (int j = 0; j < lv.n; ++j) {
    std::vector<Priced> combos(1);
    for (const auto& item : items[static_cast<size_t>(j)]) {
      std::vector<Priced> next;
      for (const Priced& c : combos) {
        for (const Priced& o : item) next.push_back(combined(c, o));
      }
      combos = undominated(std::move(next));
    }
    for (Priced& c : combos) {  // the level's copies to the host share the next layer's forward
      const double stall = std::max(0.0, c.to_host_s - forward_s(j + 1));
      c.seconds += stall;
      c.effect.objective += stall;
      c.to_host_s = 0;
    }
    combos = undominated(std::move(combos));
    Level& level = program.levels[static_cast<size_t>(j)];
    for (Priced& c : combos) {
      level.choices.push_back(c.effect);
      out.level_options[static_cast<size_t>(j)].push_back(std::move(c.options));
      out.level_seconds[static_cast<size_t>(j)].push_back(c.seconds);
    }
  }

  // Recomputing each segment, with each form of its input.
  for (size_t s = 0; s < space.segments().size(); ++s) {
    const auto& segment = space.segments()[s];
    const int first = segment.first_layer, last = segment.last_layer;
    const auto cost = space.segment_cost(static_cast<int>(s));
    SegmentLevels levels{first, last, {}};
    std::vector<int> inputs;
    std::vector<double> seconds;
    for (size_t k = 0; k < cost.input_options.size(); ++k) {
      const auto& input = cost.input_options[k];
      if (input.strategy.swap && !settings.allow_swap) continue;
      const std::vector<Change> changes = space.segment_changes(static_cast<int>(s), static_cast<int>(k));
      Recompute r;
      for (auto& slots : r.inside) slots.fill(minus_infinity);
      r.inside_far = minus_infinity;
      const int backward_from = lv.recompute[static_cast<size_t>(last)];
      for (const auto& [from, to] : {std::pair{lv.forward[static_cast<size_t>(first)], lv.forward[static_cast<size_t>(last)]},
                                     std::pair{backward_from, lv.backward[static_cast<size_t>(first)]}}) {
        const std::vector<double> added = values(changes, from, to);
        for (int p = from; p <= to; ++p) {
          const double bytes = need[static_cast<size_t>(p)] + added[static_cast<size_t>(p - from)];
          const int offset = lv.level[static_cast<size_t>(p)] - first;
          double& into = offset < window - 1 ? r.inside[static_cast<size_t>(offset)][lv.slot[static_cast<size_t>(p)]] : r.inside_far;
          into = std::max(into, bytes);
        }
      }
      place(changes, lv, last + 1, r.after, r.far);
      const double stall = std::max(0.0, link_s(input.host_bytes, target.d2h_bytes_per_s) - forward_s(first + 1)) +
                           std::max(0.0, link_s(input.host_bytes, target.h2d_bytes_per_s) - backward_s(last + 1));
      const double added_s = cost.recompute_seconds + input.codec_seconds + input.recompute_seconds + stall;
      r.objective = added_s + settings.variance_weight * variance.of_segment_input(static_cast<int>(s), input.strategy);
      levels.options.push_back(r);
      inputs.push_back(static_cast<int>(k));
      seconds.push_back(added_s);
    }
    program.segments.push_back(std::move(levels));
    out.segment_inputs.push_back(std::move(inputs));
    out.segment_seconds.push_back(std::move(seconds));
  }
  return out;
}

model::Assignment LayerProgram::assignment(const model::PlanSpace& space, const Choice& choice) const {
  std::vector<int> storage_option(space.storages().size(), 0), segment_option(space.segments().size(), -1);
  for (size_t j = 0; j < level_storages.size(); ++j) {
    const auto& options = level_options[j][static_cast<size_t>(choice.level_choice[j])];
    for (size_t i = 0; i < level_storages[j].size(); ++i) storage_option[static_cast<size_t>(level_storages[j][i])] = options[i];
  }
  for (size_t s = 0; s < segment_inputs.size(); ++s) {
    const int r = choice.recompute[s];
    if (r >= 0) segment_option[s] = segment_inputs[s][static_cast<size_t>(r)];
  }
  return space.assignment(storage_option, segment_option);
}

double LayerProgram::seconds(const Choice& choice) const {
  double total = 0;
  for (size_t j = 0; j < level_seconds.size(); ++j) total += level_seconds[j][static_cast<size_t>(choice.level_choice[j])];
  for (size_t s = 0; s < segment_seconds.size(); ++s) {
    if (choice.recompute[s] >= 0) total += segment_seconds[s][static_cast<size_t>(choice.recompute[s])];
  }
  return total;
}

}  // namespace papaya::planner
