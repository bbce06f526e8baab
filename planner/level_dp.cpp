#include "planner/level_dp.h"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace papaya::planner {
namespace {

constexpr double infinity = std::numeric_limits<double>::infinity();
using Pending = std::array<SlotBytes, window - 1>;  // near bytes at the next levels

struct State {
  double objective = infinity;  // infinity: no state in this bucket
  double far = 0;
  Pending pending{};
  bool empty() const { return objective == infinity; }
};

// The states after a level (or a segment's merge), and where each came from.
struct Stage {
  std::vector<int32_t> parent;  // the state's bucket in the stage before
  std::vector<int16_t> choice;  // a level's choice; at a merge -1 (kept) or the recompute option
  int from = -1;                // the stage before (-1: the start)
  int from_before = -1;         // at a merge: the stage before the segment's first level
  int level = -1;               // a level's stage, or -1 for a merge
  int segment = -1;             // a merge's segment
};

SlotBytes plus(const SlotBytes& a, const SlotBytes& b) { return {a[0] + b[0], a[1] + b[1], a[2] + b[2]}; }

class Solver {
 public:
  Solver(const Program& program, int cells)
      : program_(program), cells_(std::max(cells, 2)), unit_(std::max(program.most_needed, 1.0) / (cells_ - 1)) {}

  std::optional<Choice> run() {
    const int n = static_cast<int>(program_.levels.size());
    std::vector<int> starts(static_cast<size_t>(n), -1), ends(static_cast<size_t>(n), -1);
    for (size_t s = 0; s < program_.segments.size(); ++s) {
      starts[static_cast<size_t>(program_.segments[s].first)] = static_cast<int>(s);
      ends[static_cast<size_t>(program_.segments[s].last)] = static_cast<int>(s);
    }
    std::vector<State> states(static_cast<size_t>(cells_)), before;
    states[0] = State{0, 0, {}};
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
    }
    int best = -1;
    for (int b = 0; b < cells_; ++b) {
      if (!states[static_cast<size_t>(b)].empty() && (best < 0 || better(states[static_cast<size_t>(b)], states[static_cast<size_t>(best)]))) best = b;
    }
    if (best < 0) return std::nullopt;
    return trace(stage, best, states[static_cast<size_t>(best)].objective);
  }

 private:
  static bool better(const State& a, const State& b) {
    return a.objective < b.objective || (a.objective == b.objective && a.far < b.far);
  }

  int bucket(double far) const {
    const double saved = -far;
    if (saved <= 0) return 0;
    return static_cast<int>(std::min<double>(cells_ - 1, saved / unit_));
  }

  Stage& new_stage(int from) {
    Stage& st = stages_.emplace_back();
    st.parent.assign(static_cast<size_t>(cells_), -1);
    st.choice.assign(static_cast<size_t>(cells_), 0);
    st.from = from;
    return st;
  }

  void offer(std::vector<State>& into, Stage& st, const State& s, int parent, int choice) const {
    const size_t b = static_cast<size_t>(bucket(s.far));
    if (!better(s, into[b])) return;
    into[b] = s;
    st.parent[b] = parent;
    st.choice[b] = static_cast<int16_t>(choice);
  }

  std::vector<State> level(int j, const std::vector<State>& states, int from) {
    const Level& lv = program_.levels[static_cast<size_t>(j)];
    Stage& st = new_stage(from);
    st.level = j;
    std::vector<State> next(static_cast<size_t>(cells_));
    for (int c = 0; c < cells_; ++c) {
      const State& s = states[static_cast<size_t>(c)];
      if (s.empty()) continue;
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
        offer(next, st, t, c, static_cast<int>(k));
      }
    }
    return next;
  }

  std::vector<State> merge(int segment, const std::vector<State>& kept, int kept_stage, const std::vector<State>& before,
                           int before_stage) {
    const SegmentLevels& seg = program_.segments[static_cast<size_t>(segment)];
    Stage& st = new_stage(kept_stage);
    st.from_before = before_stage;
    st.segment = segment;
    std::vector<State> merged = kept;
    for (int c = 0; c < cells_; ++c) {
      if (merged[static_cast<size_t>(c)].empty()) continue;
      st.parent[static_cast<size_t>(c)] = c;
      st.choice[static_cast<size_t>(c)] = -1;
    }
    const int shift = seg.last - seg.first + 1;  // levels from the first's to the one after the last
    for (int c = 0; c < cells_; ++c) {
      const State& s = before[static_cast<size_t>(c)];
      if (s.empty()) continue;
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
        offer(merged, st, t, c, static_cast<int>(r));
      }
    }
    return merged;
  }

  Choice trace(int stage, int cell, double objective) const {
    Choice choice;
    choice.objective = objective;
    choice.level_choice.assign(program_.levels.size(), 0);
    choice.recompute.assign(program_.segments.size(), -1);
    while (stage >= 0) {
      const Stage& st = stages_[static_cast<size_t>(stage)];
      const int k = st.choice[static_cast<size_t>(cell)];
      const int parent = st.parent[static_cast<size_t>(cell)];
      if (st.level >= 0) {
        choice.level_choice[static_cast<size_t>(st.level)] = k;
        stage = st.from;
      } else if (k < 0) {
        stage = st.from;
      } else {
        choice.recompute[static_cast<size_t>(st.segment)] = k;
        stage = st.from_before;
      }
      cell = parent;
    }
    return choice;
  }

  const Program& program_;
  const int cells_;
  const double unit_;
  std::vector<Stage> stages_;
};

}  // namespace

std::optional<Choice> solve(const Program& program, int cells) { return Solver(program, cells).run(); }

}  // namespace papaya::planner
