#pragma once
// Inside PlanSpace (plan_space.h): what a stored form costs at one batch —
// device and host bytes, codec seconds — for options() and segment_cost(),
// and for the timeline and the step time of a plan.
#include <climits>
#include <cstdint>
#include <vector>

#include "model/catalog/target.h"
#include "model/plan_space/internal/index.h"
#include "model/plan_space/types.h"
#include "model/strategy.h"

namespace papaya::model::plan_space {

// One use of a stored copy in backward: unpacked (if packed) at `point`,
// timed in the backward of `charged_to`.
struct Use {
  int point = 0, charged_to = 0;
  double raw_bytes = 0;        // what unpacking reads back into
  double transient_bytes = 0;  // what it allocates
  bool of_slot = false;        // a slot's (not a recomputed segment's input)
};

// One stored form of a storage under a plan (not raw on the device).
struct Copy {
  TensorStrategy strategy;  // swap included
  int view = -1;            // of its slots (SlotEntry::view); -1: the storage's
  double device_bytes = 0;  // the stored form, allocator-rounded
  double host_bytes = 0;    // swapped: in pinned host memory
  double packed_from = 0;   // raw bytes packed in forward
  int created = INT_MAX;    // the layer whose forward stores it
  int released_at = -1;     // freed after this point: its last use in backward
  int fetched_by = -1;      // the layer whose backward needs it first (prefetch)
  std::vector<Use> uses;
};

// The option that stores a storage (or a segment's input) as `copies`, its
// slots taking `per_slot`; `raw_bytes`: the whole storage as the allocator
// holds it (AtBatch::allocated_storage); `lm_head`: the LM head whose
// log-probabilities a recomputed slot makes again (Index::lm_heads; -1: none).
Option option(const AtBatch& at, const std::vector<Copy>& copies, const std::vector<TensorStrategy>& per_slot, double raw_bytes,
              int lm_head = -1);

// The codec's scratch where it outgrows what the layer itself needs beyond
// its start (and its output, in forward): packing a copy at its maker's F
// point, and restoring a use at its point (the restored tensor with it).
double pack_scratch_bytes(const AtBatch& at, const Copy& c);
double restore_bytes(const AtBatch& at, const Copy& c, const Use& u);

double pack_seconds(const AtBatch& at, const Copy& c);
// One use of a stored copy in `layer`'s backward: unpacking it, and for an
// inverted activation the derivative from its output beyond keep's backward.
double use_seconds(const AtBatch& at, const TensorStrategy& s, int layer, double raw_bytes);

// The distinct stored forms of a storage whose slots take `per_slot`
// (slots of one view and strategy share one), each used by its slots' layers.
std::vector<Copy> copies_of(const AtBatch& at, int storage, const std::vector<TensorStrategy>& per_slot);
// The copy of a segment's input stored as `s`, among `copies`; its uses are
// the caller's to add.
Copy& input_copy(const AtBatch& at, int segment, const TensorStrategy& s, std::vector<Copy>& copies);

// The gradient of a segment's output that its backward holds when recomputed
// (0 where keep holds it as long).
double held_gradient_bytes(const AtBatch& at, int segment);

}  // namespace papaya::model::plan_space
