#pragma once
// The dynamic program behind the per-layer search (layer_search.h), on an
// abstract instance so that it can be checked by hand.
//
// Decisions come in levels, one per layer in forward order: at each level one
// combined choice for the storages that layer saves first (a combination of
// their options), and over the levels of a segment, recomputing it instead
// (with one of its input's forms), which replaces every choice inside it.
// The points of level j are the forward and backward of layer j and the
// recompute of the segment ending at j; a point of level j holds keep's bytes
// plus what every choice made at levels <= j adds there. A choice's bytes at
// the points of its first `window` levels are given exactly (`near`), beyond
// that by one value (`far`), which the instance sets to the most it adds at
// any of those points, so that the checks stay on the safe side.
//
// The program walks the levels in order. Its state: the far bytes of the
// choices so far, the near bytes they add at the next window-1 levels, and
// the objective (the added step time, plus any variance penalty). Every point
// is checked, exactly, on the state that reaches it: what keep needs there
// beyond the budget plus what the choices add must be <= 0. The states after
// a level are kept by bucket of far bytes saved — buckets split [0, the most
// the choices can save together] into `cells` — a few per bucket: those no
// other there beats in objective, far bytes and near bytes alike; when more
// are, the one saving the most and the best by objective + price * far
// bytes, where the price of a byte is the Lagrange multiplier at which the
// cheapest choice per level saves what the most demanding point needs (so
// that a bucket does not keep drifting toward cheap states that save a little
// less). A state that a state saving more beats outright is dropped too. The
// checks never round; only which states survive is approximate.
// Cost: O(levels x states x combinations per level), states <= 4 x cells.
//
// Why a dynamic program rather than one knapsack or a Lagrangian relaxation:
// the memory constraint is not one sum but one per point of the step (the
// peak is a maximum over the timeline, and a choice's bytes differ from
// point to point: a dequantized copy at its layer's backward, a swapped copy
// on its way back, a recomputed segment's layers held again during its own
// backward). Those constraints are nested along the layers — a point of
// level j sees exactly the choices at levels <= j — so a walk over the levels
// can check every one of them exactly on each state, where a relaxation
// would need a multiplier per point and a repair step, and could not match
// the optimum that small instances can be brute-forced to (tests/planner).
#include <array>
#include <optional>
#include <vector>

namespace papaya::planner {

constexpr int window = 3;
// Where at a level a point is: its forward, its backward, or (at a segment's
// last level) the recompute of that segment before its backward.
enum CheckSlot { forward_point = 0, backward_point = 1, recompute_points = 2 };
using SlotBytes = std::array<double, 3>;  // by CheckSlot

// What a choice at a level adds.
struct Effect {
  double far = 0;                        // bytes at every point `window` levels or more after its level
  std::array<SlotBytes, window> near{};  // bytes beyond `far` at the points of its level + 0, 1, 2
  double objective = 0;                  // what it costs
};

struct Level {
  SlotBytes need{};             // keep's bytes over the budget at its forward and backward points (recompute: unused)
  std::vector<Effect> choices;  // [0]: keep everything (all zero)
};

// Recomputing a segment, with its input in one form: in place of every
// choice at its levels.
struct Recompute {
  // The most (need + what it adds) at the points of the segment's level
  // first + 0, 1 (forward, backward, recompute); -infinity where there is none.
  std::array<SlotBytes, window - 1> inside{};
  double inside_far = 0;                      // the same at its later levels
  double far = 0;                             // bytes it adds at every point `window` levels or more after its last
  std::array<SlotBytes, window - 1> after{};  // beyond `far`, at levels last + 1, 2
  double objective = 0;
};

struct SegmentLevels {
  int first = 0, last = 0;
  std::vector<Recompute> options;
};

struct Program {
  std::vector<Level> levels;
  std::vector<SegmentLevels> segments;  // in order, disjoint
};

struct Choice {
  std::vector<int> level_choice;  // per level: an index into its choices (0 inside recomputed segments)
  std::vector<int> recompute;     // per segment: -1, or an index into its options
  double objective = 0;
};

// The cheapest choice the program finds whose every point is within the
// budget, or nullopt if it finds none.
std::optional<Choice> solve(const Program& program, int cells);

}  // namespace papaya::planner
