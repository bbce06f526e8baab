// What a few decisions do to the timeline, for a planner that adds them up.
#include <algorithm>
#include <map>

#include "model/plan_space/internal/held.h"
#include "model/plan_space/internal/timeline.h"
#include "model/plan_space/plan_space.h"

namespace papaya::model {

std::vector<PlanSpace::Change> PlanSpace::changes(const std::vector<std::pair<int, int>>& decisions) const {
  const plan_space::AtBatch& at = *at_;
  const plan_space::Index& ix = *at.index;
  plan_space::SlotStrategies::Decided decided;
  for (const auto& [g, option] : decisions) {
    decided.push_back({g, &ix.storage_entries.at(static_cast<size_t>(g)).candidates.at(static_cast<size_t>(option)).per_slot});
  }
  const plan_space::SlotStrategies strategies(ix, std::move(decided));
  const std::vector<bool> none_recomputed;
  const auto keep_of = [&](int g) { return std::vector<TensorStrategy>(ix.storage(g).slots.size()); };

  // What each storage concerned holds under the decisions (keep where none is made).
  std::map<int, plan_space::StorageHeld> held;
  std::vector<bool> lm_heads_recomputed(ix.lm_heads.size(), false), unused(ix.lm_heads.size(), false);
  const auto core_recomputed = [&](int g) {
    const int core = ix.storage_entries[static_cast<size_t>(g)].core;
    return core >= 0 && plan_space::core_recomputed(ix, core, strategies, none_recomputed);
  };
  const auto held_by = [&](int g) -> plan_space::StorageHeld& {
    auto it = held.find(g);
    if (it != held.end()) return it->second;
    plan_space::StorageHeld& h = held[g];
    const std::vector<TensorStrategy>* per_slot = strategies.of_storage(g);
    plan_space::hold_slots(at, g, per_slot ? *per_slot : keep_of(g), none_recomputed, core_recomputed(g), h, lm_heads_recomputed);
    return h;
  };
  for (const auto& decision : decisions) held_by(decision.first);
  // A recomputed attention core makes every storage it saves again.
  for (size_t g = 0; g < ix.storages.size(); ++g) {
    if (core_recomputed(static_cast<int>(g))) held_by(static_cast<int>(g));
  }
  for (const auto& decision : decisions) {
    for (int i : ix.storage(decision.first).slots) {
      const int output = plan_space::inverted_output_storage(ix, i, strategies, none_recomputed);
      if (output >= 0) plan_space::hold_inverted_output(at, i, strategies, none_recomputed, held_by(output));
    }
  }
  std::vector<Change> out;
  for (const auto& [g, h] : held) {
    plan_space::StorageHeld kept;
    plan_space::hold_slots(at, g, keep_of(g), none_recomputed, false, kept, unused);
    plan_space::add_storage(at, g, h, 1, out);
    plan_space::add_storage(at, g, kept, -1, out);
  }
  std::vector<bool> runs_moms(ix.layers.size(), false);
  for (const auto& decision : decisions) {
    for (int i : ix.storage(decision.first).slots) {
      const int layer = ix.slot(i).layer;
      runs_moms[static_cast<size_t>(layer)] = plan_space::runs_moms(ix, layer, strategies, none_recomputed);
    }
  }
  plan_space::add_parameter_copies(at, runs_moms, none_recomputed, out);
  for (size_t head = 0; head < lm_heads_recomputed.size(); ++head) {
    if (lm_heads_recomputed[head]) plan_space::add_lm_head_chunks(at, static_cast<int>(head), out);
  }
  return out;
}

std::vector<PlanSpace::Change> PlanSpace::segment_changes(int segment, int input_option) const {
  const plan_space::AtBatch& at = *at_;
  const plan_space::Index& ix = *at.index;
  const Segment& seg = segments().at(static_cast<size_t>(segment));
  const TensorStrategy& input =
      ix.segment_entries.at(static_cast<size_t>(segment)).input_candidates.at(static_cast<size_t>(input_option));
  std::vector<bool> recomputed(ix.segments.size(), false);
  recomputed[static_cast<size_t>(segment)] = true;
  std::vector<Change> out;
  for (int g = 0; g < static_cast<int>(ix.storages.size()); ++g) {
    const Storage& st = ix.storage(g);
    const bool inside =
        std::any_of(st.slots.begin(), st.slots.end(), [&](int i) { return ix.layer(ix.slot(i).layer).segment == segment; });
    if (!inside && g != seg.input_storage) continue;
    const std::vector<TensorStrategy> keep(st.slots.size());
    plan_space::StorageHeld with, without;
    std::vector<bool> unused(ix.lm_heads.size(), false);  // keep recomputes no LM head
    plan_space::hold_slots(at, g, keep, recomputed, false, with, unused);
    plan_space::hold_slots(at, g, keep, {}, false, without, unused);
    if (g == seg.input_storage) plan_space::hold_segment_input(at, segment, input, with);
    plan_space::add_storage(at, g, with, 1, out);
    plan_space::add_storage(at, g, without, -1, out);
  }
  plan_space::add_held_gradient(at, segment, out);
  plan_space::add_parameter_copies(at, std::vector<bool>(ix.layers.size(), false), recomputed, out);
  return out;
}

}  // namespace papaya::model
