#pragma once
// Inside PlanSpace (plan_space.h): what a plan holds, storage by storage (its
// stored copies and the points where its raw storage is held), and the rules
// that decide it, shared by timeline() (every decision made) and changes() (a
// few decisions, keep elsewhere).
#include <utility>
#include <vector>

#include "model/plan_space/internal/index.h"
#include "model/plan_space/internal/pricing.h"
#include "model/plan_space/types.h"
#include "model/strategy.h"

namespace papaya::model::plan_space {

// What one storage holds under a plan: its copies, and the point intervals
// where its raw storage is held.
struct StorageHeld {
  std::vector<Copy> copies;
  std::vector<std::pair<int, int>> raw;
};

// What an assignment holds.
struct Held {
  std::vector<StorageHeld> storages;
  std::vector<bool> recomputed;           // per segment
  std::vector<bool> runs_moms;            // per layer (see runs_moms)
  std::vector<bool> cores_recomputed;     // per attention core (see core_recomputed)
  std::vector<bool> lm_heads_recomputed;  // per LM head (Index::lm_heads)
};

// The strategy of each slot under some decisions: an assignment's, where
// every slot is decided, or those of a few storages (their options'
// per-slot strategies), where the other slots are undecided and keep.
class SlotStrategies {
 public:
  explicit SlotStrategies(const std::vector<TensorStrategy>& assigned) : assigned_(&assigned) {}
  using Decided = std::vector<std::pair<int, const std::vector<TensorStrategy>*>>;  // (storage, per slot)
  SlotStrategies(const Index& index, Decided decided) : index_(&index), decided_(std::move(decided)) {}

  // Its storage's per-slot strategies, nullptr where undecided.
  const std::vector<TensorStrategy>* of_storage(int storage) const;
  bool decided(int slot) const;
  const TensorStrategy& of(int slot) const;  // keep where undecided

 private:
  const std::vector<TensorStrategy>* assigned_ = nullptr;
  const Index* index_ = nullptr;
  Decided decided_;
};

// Whether `layer` runs its MOM Function, which casts its parameters again in
// backward instead of holding compute-dtype copies from F to B (executor
// Layer::uses_moms): where it runs (not rematerialized by a recomputed
// segment) and one of its slots is not kept. Decided with its first slot: a
// set of decisions that leaves that slot undecided leaves the copies to the
// decision on it, so that separate changes() never free them twice.
bool runs_moms(const Index& index, int layer, const SlotStrategies& strategies, const std::vector<bool>& recomputed);

// An inverted GELU/SiLU input computes its backward from the layer's output.
// The storage that output is in, where `slot` is such an input and runs; -1
// for any other slot.
int inverted_output_storage(const Index& index, int slot, const SlotStrategies& strategies, const std::vector<bool>& recomputed);
// What that storage then holds for it: the output as the slot saving it (its
// consumer) stores it, where that slot runs and stores it packed or swapped;
// raw otherwise (kept raw by its consumer, or by the layer itself).
void hold_inverted_output(const AtBatch& at, int slot, const SlotStrategies& strategies, const std::vector<bool>& recomputed,
                          StorageHeld& output);

// Whether attention core `core` is recomputed: its softmax's output is, and
// runs (no recomputed segment makes it again).
bool core_recomputed(const Index& index, int core, const SlotStrategies& strategies, const std::vector<bool>& recomputed);

// What a storage whose slots take `per_slot` holds: the raw storage while the
// network's code holds it in forward and while a slot keeps it, its stored
// copies, and its slots' tensors again from R to B where their segment is
// recomputed; where its attention core is recomputed (`core_recomputed`),
// the raw storage from the core's backward on, whatever its slots say. Sets
// `lm_heads_recomputed` (one per LM head) where a slot is an LM head's
// recomputed log-probabilities. Throws InputError where a slot swaps and the target has
// no host link.
void hold_slots(const AtBatch& at, int storage, const std::vector<TensorStrategy>& per_slot, const std::vector<bool>& recomputed,
                bool core_recomputed, StorageHeld& held, std::vector<bool>& lm_heads_recomputed);
// A recomputed segment keeps its input, as `input` says.
void hold_segment_input(const AtBatch& at, int segment, const TensorStrategy& input, StorageHeld& held);

// Everything an assignment holds. Throws std::invalid_argument if it does not
// match the space.
Held hold(const AtBatch& at, const Assignment& assignment);

}  // namespace papaya::model::plan_space
