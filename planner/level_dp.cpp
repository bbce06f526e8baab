#include "planner/level_dp.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

namespace papaya::planner {
namespace {

constexpr double infinity = std::numeric_limits<double>::infinity();
// States kept per bucket (level_dp.h). One per bucket would let a cheap state
// whose next levels hold more (a swapped copy on its way back) push out one
// that fits them.
constexpr int states_per_bucket = 4;
using Pending = std::array<SlotBytes, window - 1>;  // near bytes at the next levels

struct State {
  double objective = infinity;  // infinity: no state here
  double far = 0;
  Pending pending{};
  bool empty() const { return objective == infinity; }
};

bool better(const State& a, const State& b) { return a.objective < b.objective || (a.objective == b.objective && a.far < b.far); }

// The price of a byte: the multiplier at which the cheapest choice per level
// (objective + price * far) saves, in total, what the most demanding level
// needs (bisection). It ranks states in a full bucket.
double byte_price(const Program& program) {
  double need = 0;
  for (const Level& level : program.levels) need = std::max({need, level.need[forward_point], level.need[backward_point]});
  const auto saved_at = [&](double price) {
    double saved = 0;
    for (const Level& level : program.levels) {
      const Effect* best = &level.choices.front();
      for (const Effect& e : level.choices) {
        if (e.objective + price * e.far < best->objective + price * best->far) best = &e;
      }
      saved -= best->far;
    }
    return saved;
  };
  if (need <= 0) return 0;
  double low = 0, high = 1e-12;
  while (saved_at(high) < need && high < 1e30) high *= 4;
  for (int i = 0; i < 60 && high > low * 1.001; ++i) {
    const double mid = low == 0 ? high / 2 : std::sqrt(low * high);
    (saved_at(mid) < need ? low : high) = mid;
  }
  return high;
}

// Whether `a` is at least as good as `b` in every respect.
bool covers(const State& a, const State& b) {
  if (a.objective > b.objective || a.far > b.far) return false;
  for (size_t k = 0; k < a.pending.size(); ++k) {
    for (size_t s = 0; s < 3; ++s) {
      if (a.pending[k][s] > b.pending[k][s]) return false;
    }
  }
  return true;
}

SlotBytes plus(const SlotBytes& a, const SlotBytes& b) { return {a[0] + b[0], a[1] + b[1], a[2] + b[2]}; }

// The states after a stage, by place (bucket * states_per_bucket + slot), ascending.
using Frontier = std::vector<std::pair<int, State>>;

// The states after a level (or a segment's merge), and where each came from.
struct Stage {
  std::vector<int32_t> place, parent;  // each state's place, and its parent's in the stage before
  std::vector<int16_t> choice;         // a level's choice; at a merge -1 (kept) or the recompute option
  int from = -1;                       // the stage before (-1: the start)
  int from_before = -1;                // at a merge: the stage before the segment's first level
  int level = -1;                      // a level's stage, or -1 for a merge
  int segment = -1;                    // a merge's segment
};

// At most how many far bytes the choices save together: the range the
// buckets split, so that no two states saving different amounts share the
// last one.
double most_saved(const Program& program) {
  double total = 0;
  for (const Level& level : program.levels) {
    double most = 0;
    for (const Effect& e : level.choices) most = std::max(most, -e.far);
    total += most;
  }
  for (const SegmentLevels& segment : program.segments) {
    double most = 0;
    for (const Recompute& r : segment.options) most = std::max(most, -r.far);
    total += most;
  }
  return total;
}

class Solver {
 public:
  Solver(const Program& program, int cells)
      : program_(program),
        cells_(std::max(cells, 2)),
        unit_(std::max(most_saved(program), 1.0) / (cells_ - 1)),
        price_(byte_price(program)),
        at_(static_cast<size_t>(cells_ * states_per_bucket)),
        parent_(at_.size()),
        choice_(at_.size()) {}

  std::optional<Choice> run() {
    const int n = static_cast<int>(program_.levels.size());
    std::vector<int> starts(static_cast<size_t>(n), -1), ends(static_cast<size_t>(n), -1);
    for (size_t s = 0; s < program_.segments.size(); ++s) {
      starts[static_cast<size_t>(program_.segments[s].first)] = static_cast<int>(s);
      ends[static_cast<size_t>(program_.segments[s].last)] = static_cast<int>(s);
    }
    Frontier states = {{0, State{0, 0, {}}}}, before;
    int stage = -1, before_stage = -1;
    for (int j = 0; j < n; ++j) {
      if (starts[static_cast<size_t>(j)] >= 0) {
        before = states;
        before_stage = stage;
      }
      states = level(j, states, stage);
      stage = static_cast<int>(stages_.size()) - 1;
      if (ends[static_cast<size_t>(j)] >= 0) {
        states = merge(ends[static_cast<size_t>(j)], states, stage, before, before_stage);
        stage = static_cast<int>(stages_.size()) - 1;
      }
      drop_beaten(states);
    }
    const auto best =
        std::min_element(states.begin(), states.end(), [](const auto& a, const auto& b) { return better(a.second, b.second); });
    if (best == states.end()) return std::nullopt;
    return trace(stage, best->first, best->second.objective);
  }

 private:
  int bucket(double far) const {
    const double saved = -far;
    if (saved <= 0) return 0;
    return static_cast<int>(std::min<double>(cells_ - 1, saved / unit_));
  }

  // Keeps `s` in its bucket unless a state there covers it; drops those it
  // covers, and when the bucket is full the worst by objective + price * far
  // bytes, never the one saving the most.
  void offer(const State& s, int parent, int choice) {
    const int first = bucket(s.far) * states_per_bucket;
    int place = -1;
    for (int i = first; i < first + states_per_bucket; ++i) {
      State& there = at_[static_cast<size_t>(i)];
      if (there.empty()) {
        if (place < 0) place = i;
        continue;
      }
      if (covers(there, s)) return;
      if (covers(s, there)) {
        there = State{};
        if (place < 0) place = i;
      }
    }
    if (place < 0) {
      int most_saving = first;
      for (int i = first; i < first + states_per_bucket; ++i) {
        if (at_[static_cast<size_t>(i)].far < at_[static_cast<size_t>(most_saving)].far) most_saving = i;
      }
      const auto worse = [&](const State& a, const State& b) {
        return a.objective + price_ * a.far > b.objective + price_ * b.far;
      };
      for (int i = first; i < first + states_per_bucket; ++i) {
        if (i != most_saving && (place < 0 || worse(at_[static_cast<size_t>(i)], at_[static_cast<size_t>(place)]))) place = i;
      }
      const bool saves_most = s.far < at_[static_cast<size_t>(most_saving)].far;
      if (saves_most && worse(at_[static_cast<size_t>(most_saving)], at_[static_cast<size_t>(place)])) place = most_saving;
      if (!saves_most && !worse(at_[static_cast<size_t>(place)], s)) return;
    }
    at_[static_cast<size_t>(place)] = s;
    parent_[static_cast<size_t>(place)] = parent;
    choice_[static_cast<size_t>(place)] = static_cast<int16_t>(choice);
    touched_.push_back(place);
  }

  // The offered states as a frontier, recorded as a stage; clears the scratch.
  Frontier take(Stage&& st) {
    std::sort(touched_.begin(), touched_.end());
    touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
    Frontier out;
    for (int p : touched_) {
      State& s = at_[static_cast<size_t>(p)];
      if (s.empty()) continue;
      out.push_back({p, s});
      st.place.push_back(p);
      st.parent.push_back(parent_[static_cast<size_t>(p)]);
      st.choice.push_back(choice_[static_cast<size_t>(p)]);
      s = State{};
    }
    touched_.clear();
    stages_.push_back(std::move(st));
    return out;
  }

  // Drops every state that a state saving more far bytes beats: as cheap, and
  // adding nothing at the next levels where it adds something or more. (Within
  // a bucket, offer() does this.) Buckets from the most saving down.
  void drop_beaten(Frontier& states) const {
    double cheapest_clean = infinity;  // among states with nothing at the next levels, in the buckets above
    double clean_here = infinity;
    int bucket_here = -1;
    Frontier kept;
    for (auto it = states.rbegin(); it != states.rend(); ++it) {
      const int b = it->first / states_per_bucket;
      if (b != bucket_here) {
        cheapest_clean = std::min(cheapest_clean, clean_here);
        clean_here = infinity;
        bucket_here = b;
      }
      const State& s = it->second;
      bool none_below_zero = true, clean = true;
      for (const SlotBytes& level : s.pending) {
        for (double bytes : level) {
          none_below_zero = none_below_zero && bytes >= 0;
          clean = clean && bytes == 0;
        }
      }
      if (none_below_zero && s.objective >= cheapest_clean) continue;
      if (clean) clean_here = std::min(clean_here, s.objective);
      kept.push_back(*it);
    }
    states.assign(kept.rbegin(), kept.rend());
  }

  Frontier level(int j, const Frontier& states, int from) {
    const Level& lv = program_.levels[static_cast<size_t>(j)];
    for (const auto& [c, s] : states) {
      for (size_t k = 0; k < lv.choices.size(); ++k) {
        const Effect& e = lv.choices[k];
        const double far = s.far + e.far;
        if (lv.need[forward_point] + far + s.pending[0][forward_point] + e.near[0][forward_point] > 0) continue;
        if (lv.need[backward_point] + far + s.pending[0][backward_point] + e.near[0][backward_point] > 0) continue;
        State t{s.objective + e.objective, far, {}};
        for (int next_level = 1; next_level < window; ++next_level) {
          const SlotBytes& earlier = next_level < window - 1 ? s.pending[static_cast<size_t>(next_level)] : SlotBytes{};
          t.pending[static_cast<size_t>(next_level - 1)] = plus(earlier, e.near[static_cast<size_t>(next_level)]);
        }
        offer(t, c, static_cast<int>(k));
      }
    }
    Stage st;
    st.from = from;
    st.level = j;
    return take(std::move(st));
  }

  Frontier merge(int segment, const Frontier& kept, int kept_stage, const Frontier& before, int before_stage) {
    const SegmentLevels& seg = program_.segments[static_cast<size_t>(segment)];
    for (const auto& [c, s] : kept) offer(s, c, -1);
    const int shift = seg.last - seg.first + 1;  // levels from the first's to the one after the last
    for (const auto& [c, s] : before) {
      for (size_t r = 0; r < seg.options.size(); ++r) {
        const Recompute& o = seg.options[r];
        bool fits = o.inside_far + s.far <= 0;
        for (int off = 0; off < window - 1 && fits; ++off) {
          for (int slot = 0; slot < 3 && fits; ++slot) fits = o.inside[off][slot] + s.far + s.pending[off][slot] <= 0;
        }
        if (!fits) continue;
        State t{s.objective + o.objective, s.far + o.far, {}};
        for (int k = 0; k < window - 1; ++k) {
          t.pending[k] = k + shift < window - 1 ? plus(s.pending[k + shift], o.after[k]) : o.after[k];
        }
        offer(t, c, static_cast<int>(r));
      }
    }
    Stage st;
    st.from = kept_stage;
    st.from_before = before_stage;
    st.segment = segment;
    return take(std::move(st));
  }

  Choice trace(int stage, int place, double objective) const {
    Choice choice;
    choice.objective = objective;
    choice.level_choice.assign(program_.levels.size(), 0);
    choice.recompute.assign(program_.segments.size(), -1);
    while (stage >= 0) {
      const Stage& st = stages_[static_cast<size_t>(stage)];
      const size_t i = static_cast<size_t>(std::lower_bound(st.place.begin(), st.place.end(), place) - st.place.begin());
      const int k = st.choice[i];
      if (st.level >= 0) {
        choice.level_choice[static_cast<size_t>(st.level)] = k;
        stage = st.from;
      } else if (k < 0) {
        stage = st.from;
      } else {
        choice.recompute[static_cast<size_t>(st.segment)] = k;
        stage = st.from_before;
      }
      place = st.parent[i];
    }
    return choice;
  }

  const Program& program_;
  const int cells_;
  const double unit_;
  const double price_;
  std::vector<State> at_;  // scratch: the states offered to the stage being made, by place
  std::vector<int32_t> parent_;
  std::vector<int16_t> choice_;
  std::vector<int> touched_;
  std::vector<Stage> stages_;
};

}  // namespace

std::optional<Choice> solve(const Program& program, int cells) { return Solver(program, cells).run(); }

}  // namespace papaya::planner
