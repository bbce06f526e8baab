#include "planner/layer_program.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <string>

#include "model/plan.h"

namespace papaya::planner {
namespace {

constexpr double minus_infinity = -std::numeric_limits<double>::infinity();
using Change = model::PlanSpace::Change;

// Where the points of each level are (level_dp.h: the points of level j are
// the forward and backward of layer j, with the gaps before them, and the
// recompute of the segment ending at j). The points of levels >= j are the
// contiguous indices from forward[j] to backward[j], and the gaps before them.
struct Levels {
  int n = 0;
  std::vector<int> level;              // per point
  std::vector<CheckSlot> slot;         // per point
  std::vector<int> forward, backward;  // per layer: its point
  std::vector<int> recompute;          // per layer: the first recompute point of the segment ending there, or -1

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
        case model::Phase::forward: forward[static_cast<size_t>(p.layer)] = at; [[fallthrough]];
        case model::Phase::forward_gap:
          level.push_back(p.layer);
          slot.push_back(forward_point);
          break;
        case model::Phase::backward: backward[static_cast<size_t>(p.layer)] = at; [[fallthrough]];
        case model::Phase::backward_gap:
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
// `near`, beyond `far`), and at most `far` beyond. Near the end of the
// network, where there is no level beyond, `far` is what they add at the last
// level: any value is exact there, and this one ranks states by what they
// save (level_dp.h buckets them by far bytes).
template <size_t N>
void place(const std::vector<Change>& changes, const Levels& lv, int level, std::array<SlotBytes, N>& near, double& far) {
  const int count = static_cast<int>(N);
  const size_t beyond = static_cast<size_t>(std::min(level + count, lv.n - 1));
  far = level < lv.n ? most(changes, lv.forward[beyond], lv.backward[beyond]) : 0;
  near = {};
  for (int k = 0; k < count && level + k < lv.n; ++k) {
    const size_t j = static_cast<size_t>(level + k);
    near[static_cast<size_t>(k)][forward_point] = at(changes, lv.forward[j]) - far;
    near[static_cast<size_t>(k)][backward_point] = at(changes, lv.backward[j]) - far;
    if (lv.recompute[j] >= 0) near[static_cast<size_t>(k)][recompute_points] = at(changes, lv.recompute[j]) - far;
  }
}

// One option of an item (its storages' options), or a combination of them at
// one level.
struct Priced {
  std::vector<int> options;
  Effect effect;         // objective: without the stall of copies to the host
  double seconds = 0;    // likewise
  double to_host_s = 0;  // link seconds of its copies to the host
  double variance = 0;
  bool swaps = false;
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

// Past this many combinations of a level's options (a layer that saves
// hundreds of tensors, as an LSTM saves each time step's), undominated()'s
// pairwise comparisons take minutes; the program's other levels stay far
// below it (nanoGPT's largest: 600).
constexpr size_t most_weighed = 1024;

// All of `all` up to most_weighed; past it, those that no other beats in both
// seconds and total bytes (each also undominated in every respect), spread
// evenly by seconds if still too many. The first (keep) always stays; the
// order is kept.
std::vector<Priced> thinned(std::vector<Priced> all) {
  if (all.size() <= most_weighed) return all;
  std::vector<double> bytes;
  for (const Priced& p : all) {
    double sum = p.effect.far;
    for (const SlotBytes& slots : p.effect.near) {
      for (double b : slots) sum += b;
    }
    bytes.push_back(sum);
  }
  std::vector<size_t> order(all.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return all[a].effect.objective != all[b].effect.objective ? all[a].effect.objective < all[b].effect.objective
                                                              : bytes[a] < bytes[b];
  });
  std::vector<size_t> front;  // by seconds, each saving more than those before it
  for (size_t i : order) {
    if (front.empty() || bytes[i] < bytes[front.back()]) front.push_back(i);
  }
  std::vector<size_t> chosen = {0};
  for (size_t k = 0; k < std::min(front.size(), most_weighed); ++k) {
    chosen.push_back(front.size() <= most_weighed ? front[k] : front[k * (front.size() - 1) / (most_weighed - 1)]);
  }
  std::sort(chosen.begin(), chosen.end());
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  std::vector<Priced> kept;
  for (size_t i : chosen) kept.push_back(std::move(all[i]));
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
  c.variance += b.variance;
  c.swaps = c.swaps || b.swaps;
  return c;
}

// The next combination of option indices (an odometer); false after the last.
bool next_pick(std::vector<int>& pick, const std::vector<std::vector<model::PlanSpace::Option>>& options) {
  for (size_t i = 0; i < pick.size(); ++i) {
    if (++pick[i] < static_cast<int>(options[i].size())) return true;
    pick[i] = 0;
  }
  return false;
}

int last_user(const model::PlanSpace& space, int g) {
  const auto& storage = space.storages()[static_cast<size_t>(g)];
  int last = storage.first_layer;
  for (int i : storage.slots) last = std::max(last, space.slots()[static_cast<size_t>(i)].layer);
  return last;
}

// The storages with a choice, in items decided together: each alone, but a
// GELU/SiLU input with the storage of the slot that saves its output, since
// an inverted GELU keeps its output as that slot does (PlanSpace::changes).
std::vector<std::vector<int>> decided_together(const model::LayerModel& model, const model::PlanSpace& space) {
  std::vector<int> item(space.storages().size(), -1);
  std::vector<std::vector<int>> items;
  for (size_t g = 0; g < space.storages().size(); ++g) {
    if (space.storages()[g].slots.empty() || space.options(static_cast<int>(g)).size() < 2) continue;
    item[g] = static_cast<int>(items.size());
    items.push_back({static_cast<int>(g)});
  }
  std::map<std::string, int> storage_of;
  for (const auto& slot : space.slots()) storage_of[slot.key] = slot.storage;
  for (const auto& layer : model.layers) {
    if (!model::traits(layer.kind).invertible_input || layer.output_saved_by.empty()) continue;
    const auto input = storage_of.find(model::tensor_key(layer.path, "input"));
    const auto output = storage_of.find(layer.output_saved_by.front());
    if (input == storage_of.end() || output == storage_of.end() || input->second == output->second) continue;
    const int a = item[static_cast<size_t>(input->second)], b = item[static_cast<size_t>(output->second)];
    if (a < 0 || b < 0 || a == b || items[static_cast<size_t>(a)].size() > 1 || items[static_cast<size_t>(b)].size() > 1)
      continue;
    items[static_cast<size_t>(a)].push_back(output->second);
    items[static_cast<size_t>(b)].clear();
  }
  items.erase(std::remove_if(items.begin(), items.end(), [](const auto& i) { return i.empty(); }), items.end());
  return items;
}

// Storages decided together, with every combination of their options priced.
struct Item {
  int level = 0;
  std::vector<int> storages;
  std::vector<Priced> options;
};

// Recomputing a segment with its input in one form, priced.
struct SegmentOption {
  int input = 0;  // segment_cost's index
  bool swaps = false;
  double seconds = 0, variance = 0, far = 0;
  std::array<SlotBytes, window - 1> after{};
  std::vector<double> added;  // bytes at the segment's points: its forwards, then its recomputes and backwards
};

struct SegmentParts {
  int first = 0, last = 0;
  std::pair<int, int> forward, backward;  // its points
  std::vector<SegmentOption> options;
};

}  // namespace

struct ProgramBuilder::Parts {
  Levels lv;
  std::vector<double> keep_bytes;  // timeline() of keep
  double unattributed = 0;
  std::vector<double> next_forward_s;  // per level: the next layer's forward, which hides the level's copies to the host
  std::vector<Item> items;
  std::vector<SegmentParts> segments;

  explicit Parts(const model::PlanSpace& space) : lv(space) {}
};

ProgramBuilder::ProgramBuilder(const model::LayerModel& model, const model::PlanSpace& space, const VarianceProxy& variance) {
  auto parts = std::make_shared<Parts>(space);
  Parts& pt = *parts;
  const Levels& lv = pt.lv;
  const model::Target& target = space.target();
  const double batch = static_cast<double>(space.batch());
  const auto forward_s = [&](int layer) {
    return layer < lv.n ? target.forward_seconds[static_cast<size_t>(layer)].at(batch) : 0.0;
  };
  const auto backward_s = [&](int layer) {
    return layer < lv.n ? target.backward_seconds[static_cast<size_t>(layer)].at(batch) : 0.0;
  };
  const auto link_s = [&](double bytes, double rate) { return bytes > 0 ? bytes / rate : 0.0; };

  const model::Assignment keep =
      space.assignment(std::vector<int>(space.storages().size(), 0), std::vector<int>(space.segments().size(), -1));
  pt.keep_bytes = space.timeline(keep);
  double highest = minus_infinity;
  for (size_t p = 0; p < pt.keep_bytes.size(); ++p) {
    if (lv.slot[p] != recompute_points) highest = std::max(highest, pt.keep_bytes[p]);
  }
  pt.unattributed = space.evaluate(keep).peak_bytes - highest;
  for (int j = 0; j < lv.n; ++j) pt.next_forward_s.push_back(forward_s(j + 1));

  for (const auto& storages : decided_together(model, space)) {
    Item item;
    item.level = lv.n;
    item.storages = storages;
    std::vector<std::vector<model::PlanSpace::Option>> options;
    for (int g : storages) {
      item.level = std::min(item.level, space.storages()[static_cast<size_t>(g)].first_layer);
      options.push_back(space.options(g));
    }
    std::vector<int> pick(storages.size(), 0);
    do {
      std::vector<std::pair<int, int>> decisions;
      Priced p;
      for (size_t i = 0; i < storages.size(); ++i) {
        const int g = storages[i];
        const auto& option = options[i][static_cast<size_t>(pick[i])];
        decisions.push_back({g, pick[i]});
        p.options.push_back(pick[i]);
        const double from_host_stall =
            std::max(0.0, link_s(option.host_bytes, target.h2d_bytes_per_s) - backward_s(last_user(space, g) + 1));
        p.seconds += option.codec_seconds + option.recompute_seconds + from_host_stall;
        p.to_host_s += link_s(option.host_bytes, target.d2h_bytes_per_s);
        p.variance += variance.of_option(g, option);
        p.swaps = p.swaps || option.strategy.swap;
      }
      place(space.changes(decisions), lv, item.level, p.effect.near, p.effect.far);
      item.options.push_back(std::move(p));
    } while (next_pick(pick, options));
    pt.items.push_back(std::move(item));
  }

  for (size_t s = 0; s < space.segments().size(); ++s) {
    const auto& segment = space.segments()[s];
    SegmentParts sp;
    sp.first = segment.first_layer;
    sp.last = segment.last_layer;
    sp.forward = {lv.forward[static_cast<size_t>(sp.first)], lv.forward[static_cast<size_t>(sp.last)]};
    sp.backward = {lv.recompute[static_cast<size_t>(sp.last)], lv.backward[static_cast<size_t>(sp.first)]};
    const auto cost = space.segment_cost(static_cast<int>(s));
    for (size_t k = 0; k < cost.input_options.size(); ++k) {
      const auto& input = cost.input_options[k];
      const std::vector<Change> changes = space.segment_changes(static_cast<int>(s), static_cast<int>(k));
      SegmentOption o;
      o.input = static_cast<int>(k);
      o.swaps = input.strategy.swap;
      o.added = values(changes, sp.forward.first, sp.forward.second);
      const std::vector<double> backward = values(changes, sp.backward.first, sp.backward.second);
      o.added.insert(o.added.end(), backward.begin(), backward.end());
      place(changes, lv, sp.last + 1, o.after, o.far);
      const double stall = std::max(0.0, link_s(input.host_bytes, target.d2h_bytes_per_s) - forward_s(sp.first + 1)) +
                           std::max(0.0, link_s(input.host_bytes, target.h2d_bytes_per_s) - backward_s(sp.last + 1));
      o.seconds = cost.recompute_seconds + input.codec_seconds + input.recompute_seconds + stall;
      o.variance = variance.of_segment_input(static_cast<int>(s), input.strategy);
      sp.options.push_back(std::move(o));
    }
    pt.segments.push_back(std::move(sp));
  }
  parts_ = std::move(parts);
}

LayerProgram ProgramBuilder::build(const ProgramSettings& settings) const {
  const Parts& pt = *parts_;
  const Levels& lv = pt.lv;
  // The program adds bytes in another order than evaluate() does, so its sums
  // may differ from it in the last bits: half a byte of slack keeps a plan
  // exactly at the budget in reach (bytes held are whole; evaluate() judges).
  constexpr double rounding_slack = 0.5;
  std::vector<double> need(pt.keep_bytes.size());
  for (size_t p = 0; p < need.size(); ++p) {
    need[p] = pt.keep_bytes[p] + pt.unattributed + (settings.correction.empty() ? 0 : settings.correction[p]) -
              settings.budget_bytes - rounding_slack;
  }
  const auto objective = [&](double seconds, double variance) { return seconds + settings.variance_weight * variance; };

  LayerProgram out;
  out.unattributed_bytes = pt.unattributed;
  Program& program = out.program;
  program.levels.resize(static_cast<size_t>(lv.n));
  out.level_storages.resize(static_cast<size_t>(lv.n));
  out.level_options.resize(static_cast<size_t>(lv.n));
  out.level_seconds.resize(static_cast<size_t>(lv.n));

  // Each item's options that the settings allow, by level.
  std::vector<std::vector<std::vector<Priced>>> items(static_cast<size_t>(lv.n));
  for (const Item& item : pt.items) {
    std::vector<Priced> allowed;
    for (const Priced& p : item.options) {
      if ((p.swaps && !settings.allow_swap) || (p.variance > 0 && !settings.allow_lossy)) continue;
      allowed.push_back(p);
      allowed.back().effect.objective = objective(p.seconds, p.variance);
    }
    items[static_cast<size_t>(item.level)].push_back(undominated(std::move(allowed)));
    auto& decided = out.level_storages[static_cast<size_t>(item.level)];
    decided.insert(decided.end(), item.storages.begin(), item.storages.end());
  }

  // A level's need at a slot: its points' largest (a layer's and its gap's).
  for (Level& level : program.levels) level.need = {minus_infinity, minus_infinity, 0};
  for (size_t p = 0; p < need.size(); ++p) {
    if (lv.slot[p] == recompute_points) continue;
    double& slot_need = program.levels[static_cast<size_t>(lv.level[p])].need[lv.slot[p]];
    slot_need = std::max(slot_need, need[p]);
  }

  // Per level, the combinations of its items' options.
  for (int j = 0; j < lv.n; ++j) {
    Level& level = program.levels[static_cast<size_t>(j)];
    std::vector<Priced> combos(1);
    for (const auto& item : items[static_cast<size_t>(j)]) {
      std::vector<Priced> next;
      for (const Priced& c : combos) {
        for (const Priced& o : item) next.push_back(combined(c, o));
      }
      combos = undominated(thinned(std::move(next)));
    }
    for (Priced& c : combos) {  // the level's copies to the host share the next layer's forward
      const double stall = std::max(0.0, c.to_host_s - pt.next_forward_s[static_cast<size_t>(j)]);
      c.seconds += stall;
      c.effect.objective += stall;
      c.to_host_s = 0;
    }
    combos = undominated(std::move(combos));
    for (Priced& c : combos) {
      level.choices.push_back(c.effect);
      out.level_options[static_cast<size_t>(j)].push_back(std::move(c.options));
      out.level_seconds[static_cast<size_t>(j)].push_back(c.seconds);
    }
  }

  // Recomputing each segment, with each form of its input that the settings allow.
  for (const SegmentParts& sp : pt.segments) {
    SegmentLevels levels{sp.first, sp.last, {}};
    std::vector<int> inputs;
    std::vector<double> seconds;
    for (const SegmentOption& o : sp.options) {
      if ((o.swaps && !settings.allow_swap) || (o.variance > 0 && !settings.allow_lossy)) continue;
      Recompute r;
      for (auto& slots : r.inside) slots.fill(minus_infinity);
      r.inside_far = minus_infinity;
      size_t at = 0;
      for (const auto& [from, to] : {sp.forward, sp.backward}) {
        for (int p = from; p <= to; ++p, ++at) {
          const double bytes = need[static_cast<size_t>(p)] + o.added[at];
          const int offset = lv.level[static_cast<size_t>(p)] - sp.first;
          double& into =
              offset < window - 1 ? r.inside[static_cast<size_t>(offset)][lv.slot[static_cast<size_t>(p)]] : r.inside_far;
          into = std::max(into, bytes);
        }
      }
      r.far = o.far;
      r.after = o.after;
      r.objective = objective(o.seconds, o.variance);
      levels.options.push_back(r);
      inputs.push_back(o.input);
      seconds.push_back(o.seconds);
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
