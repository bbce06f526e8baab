#pragma once
// Inside PlanSpace (plan_space.h): what a plan's holdings (held.h)
// add to or take from keep's bytes at each point of the timeline, as changes
// over intervals of points, and the timeline and its peak that they make.
#include <vector>

#include "model/plan_space/internal/held.h"
#include "model/plan_space/internal/index.h"
#include "model/plan_space/types.h"

namespace papaya::model::plan_space {

using Changes = std::vector<Change>;

// What one of add_storage's changes is: keep's storage let go, the raw
// storage held, a stored copy (of `strategy`), a codec's scratch and
// unpacked transients, or what the layer's pass storing or restoring a
// packed copy does beyond them (stored_scratch.h).
struct StorageChange {
  enum class Kind { keep_storage, raw, copy, scratch, stored_scratch };
  Kind kind = Kind::raw;
  TensorStrategy strategy;
};

// What a storage holds beyond (sign 1) or instead of (sign -1) keep's
// storage: its raw intervals, its copies, and their codec's scratch and
// unpacked transients; with `kinds`, what each change is, in order.
void add_storage(const AtBatch& at, int storage, const StorageHeld& held, double sign, Changes& out,
                 std::vector<StorageChange>* kinds = nullptr);
// A recomputed segment's backward holds its output's gradient after its last
// layer's backward, where keep has let it go.
void add_held_gradient(const AtBatch& at, int segment, Changes& out);
// A layer's parameter copies, held by keep from its F to its B point: not in
// between where it runs its MOM Function, nor before its R point where its
// segment is recomputed (`recomputed` empty: none is).
void add_parameter_copies(const AtBatch& at, const std::vector<bool>& runs_moms, const std::vector<bool>& recomputed,
                          Changes& out);
// LM head `head`'s batch-proportional transients (logits, log-probabilities
// and their gradients) shrink to one chunk; backward recomputes the chunk's
// log-probabilities.
void add_lm_head_chunks(const AtBatch& at, int head, Changes& out);

// The bytes allocated at every point, without the unattributed peak.
std::vector<double> bytes_at(const AtBatch& at, const Held& held);
// Changes summed into bytes at every point.
std::vector<double> summed(const AtBatch& at, const Changes& changes);
// An estimate's memory: the peak, at the highest point (R points of
// recomputed segments only) plus the unattributed peak, or in the optimizer's
// step where that is higher, and the pinned host memory holding swapped
// copies.
Estimate memory_of(const AtBatch& at, const Held& held);

}  // namespace papaya::model::plan_space
