// PlanSpace's options: every way to store a storage or a recomputed
// segment's input, priced at the space's batch (internal/pricing.h).
#include <algorithm>

#include "model/plan_space/internal/index.h"
#include "model/plan_space/internal/pricing.h"
#include "model/plan_space/plan_space.h"

namespace papaya::model {

std::vector<PlanSpace::Option> PlanSpace::options(int storage) const {
  const plan_space::AtBatch& at = *at_;
  std::vector<Option> out;
  const plan_space::StorageEntry& entry = at.index->storage_entries.at(static_cast<size_t>(storage));
  int lm_head = -1;  // the LM head whose log-probabilities it holds, if any
  for (int slot : at.index->storage(storage).slots)
    lm_head = std::max(lm_head, at.index->layer(at.index->slot(slot).layer).lm_head);
  for (const auto& [asked, per_slot] : entry.candidates) {
    out.push_back(
        plan_space::option(at, plan_space::copies_of(at, storage, per_slot), per_slot, at.allocated_storage(storage), lm_head));
    out.back().strategy = asked;
    // An attention core's probabilities: the core's forward again (the
    // storages it saves beside them are freed too, as their own options do not say).
    if (entry.core >= 0 && recomputes(asked.form)) out.back().recompute_seconds = at.core_recompute_seconds(entry.core);
  }
  return out;
}

PlanSpace::SegmentCost PlanSpace::segment_cost(int segment) const {
  const plan_space::AtBatch& at = *at_;
  const plan_space::Index& ix = *at.index;
  const Segment& seg = segments().at(static_cast<size_t>(segment));
  SegmentCost cost;
  cost.recompute_seconds = at.segment(segment).recompute_s;
  for (size_t g = 0; g < ix.storages.size(); ++g) {
    const Storage& st = ix.storages[g];
    if (st.slots.empty()) continue;
    const auto inside = [&](int i) { return ix.layer(ix.slot(i).layer).segment == segment; };
    const double bytes = at.allocated_storage(static_cast<int>(g));
    if (std::any_of(st.slots.begin(), st.slots.end(), inside)) cost.rematerialized_bytes += bytes;
    if (std::all_of(st.slots.begin(), st.slots.end(), inside) && !ix.storage_entries[g].held_by_caller) {
      cost.freed_bytes += bytes;
    }
  }
  cost.rematerialized_bytes += plan_space::held_gradient_bytes(at, segment);
  for (int j = seg.first_layer; j <= seg.last_layer; ++j) {
    const double copy = at.world->parameter_copy_bytes[static_cast<size_t>(j)];
    cost.freed_bytes += copy;
    cost.rematerialized_bytes += copy;
  }
  const double raw = at.segment(segment).input_bytes;
  for (const TensorStrategy& s : ix.segment_entry(segment).input_candidates) {
    if (s.is_keep()) {
      cost.input_options.push_back(plan_space::option(at, {}, {s}, at.allocated_storage(seg.input_storage)));
      continue;
    }
    std::vector<plan_space::Copy> copies;
    plan_space::input_copy(at, segment, s, copies).uses.push_back({0, 0, raw, raw});
    cost.input_options.push_back(plan_space::option(at, copies, {s}, at.target().allocated(raw)));
    cost.input_options.back().strategy = s;
  }
  return cost;
}

}  // namespace papaya::model
