// What a plan holds, storage by storage, and when.
#include "model/plan_space/internal/held.h"

#include <algorithm>
#include <stdexcept>

#include "model/error.h"

namespace papaya::model::plan_space {
namespace {

const TensorStrategy keep{};

// The raw storage held from a user's forward (no earlier than the storage's
// first saver, before which it is the forward's own) to `until`, where its
// backward reads it.
void hold_raw_user(const Index& ix, int storage, int layer, int until, StorageHeld& held) {
  const Storage& st = ix.storage(storage);
  const int from = st.slots.empty() ? layer + 1 : ix.layer(std::max(layer, st.first_layer)).forward_at;
  held.raw.push_back({from, until});
}

}  // namespace

const std::vector<TensorStrategy>* SlotStrategies::of_storage(int storage) const {
  for (const auto& [g, per_slot] : decided_) {
    if (g == storage) return per_slot;
  }
  return nullptr;
}

bool SlotStrategies::decided(int slot) const { return assigned_ || of_storage(index_->slot(slot).storage); }

const TensorStrategy& SlotStrategies::of(int slot) const {
  if (assigned_) return (*assigned_)[static_cast<size_t>(slot)];
  const std::vector<TensorStrategy>* per_slot = of_storage(index_->slot(slot).storage);
  return per_slot ? (*per_slot)[index_->slot_entry(slot).position] : keep;
}

bool runs_moms(const Index& ix, int layer, const SlotStrategies& strategies, const std::vector<bool>& recomputed) {
  const LayerEntry& entry = ix.layer(layer);
  if (entry.slot_count == 0 || !strategies.decided(entry.first_slot) || !ix.active(layer, recomputed)) return false;
  for (int i = entry.first_slot; i < entry.first_slot + entry.slot_count; ++i) {
    if (!strategies.of(i).is_keep()) return true;
  }
  return false;
}

int inverted_output_storage(const Index& ix, int slot, const SlotStrategies& strategies, const std::vector<bool>& recomputed) {
  const int layer = ix.slot(slot).layer;
  if (!derives_from_output(strategies.of(slot).form) || !ix.active(layer, recomputed)) return -1;
  return ix.layer(layer).output_storage;
}

void hold_inverted_output(const AtBatch& at, int slot, const SlotStrategies& strategies, const std::vector<bool>& recomputed,
                          StorageHeld& output) {
  const Index& ix = *at.index;
  const int j = ix.slot(slot).layer;
  const LayerEntry& layer = ix.layer(j);
  const int consumer = layer.output_consumer_slot;
  auto it = output.copies.end();
  if (consumer >= 0 && ix.active(ix.slot(consumer).layer, recomputed)) {
    const TensorStrategy& stored_as = strategies.of(consumer);
    const int view = ix.slot_entry(consumer).view;
    it = std::find_if(output.copies.begin(), output.copies.end(),
                      [&](const Copy& c) { return c.strategy == stored_as && c.view == view; });
  }
  if (it == output.copies.end()) {  // the output is kept raw, by its consumer or by the layer itself
    hold_raw_user(ix, layer.output_storage, j, layer.backward_at, output);
    return;
  }
  const double raw = at.slot(consumer).bytes;
  it->created = std::min(it->created, j);  // the activation stores it, for its consumer to find
  it->released_at = std::max(it->released_at, layer.backward_at);
  it->uses.push_back({layer.backward_at, j, raw, raw, true});
}

bool core_recomputed(const Index& ix, int core, const SlotStrategies& strategies, const std::vector<bool>& recomputed) {
  const AttentionCore& c = ix.core(core);
  return recomputes(strategies.of(c.output_slot).form) && ix.active(c.softmax, recomputed);
}

void hold_slots(const AtBatch& at, int storage, const std::vector<TensorStrategy>& per_slot, const std::vector<bool>& recomputed,
                bool core_recomputed, StorageHeld& held, std::vector<bool>& lm_heads_recomputed) {
  const Index& ix = *at.index;
  const Storage& st = ix.storage(storage);
  if (st.slots.empty()) return;
  // While the network's code holds it in forward, the storage is there
  // whatever the plan; the batch's data, all step.
  const StorageEntry& facts = ix.storage_entry(storage);
  if (facts.held_by_caller) {
    held.raw.push_back({0, static_cast<int>(ix.points.size()) - 1});
  } else {
    held.raw.push_back({ix.layer(st.first_layer).forward_at, ix.layer(facts.code_holds_until).forward_at});
  }
  if (core_recomputed) {  // made again by the core's backward, used down to its first saver's
    held.raw.push_back({ix.layer(ix.core(facts.core).context).backward_at, facts.released_at});
    return;
  }
  std::vector<TensorStrategy> stored(st.slots.size());  // what copies_of makes copies of
  for (size_t k = 0; k < st.slots.size(); ++k) {
    const Slot& slot = ix.slot(st.slots[k]);
    const TensorStrategy& s = per_slot[k];
    if (!ix.active(slot.layer, recomputed)) {  // rematerialized by its segment's recompute
      held.raw.push_back({ix.layer(slot.layer).recompute_at, ix.slot_entry(st.slots[k]).used_at});
      continue;
    }
    if (s.swap && !at.target().has_host_link()) {
      throw InputError(slot.key + ": " + s.name() + " needs a host link, which " + at.target().name +
                       " lacks (predict for a GPU of the catalog)");
    }
    const int head = ix.layer(slot.layer).lm_head;
    if (recomputes(s.form) && facts.core < 0 && head >= 0) lm_heads_recomputed[static_cast<size_t>(head)] = true;
    if (s.is_keep()) hold_raw_user(ix, storage, slot.layer, ix.slot_entry(st.slots[k]).used_at, held);
    stored[k] = s;
  }
  held.copies = copies_of(at, storage, stored);
}

void hold_segment_input(const AtBatch& at, int segment, const TensorStrategy& input, StorageHeld& held) {
  const Index& ix = *at.index;
  const Segment& seg = ix.segment(segment);
  const int until = ix.layer(seg.first_layer).backward_at;
  if (input.is_keep()) {
    hold_raw_user(ix, seg.input_storage, seg.first_layer, until, held);
    return;
  }
  if (input.swap && !at.target().has_host_link()) {
    throw InputError(seg.path + ": recompute+" + input.name() + " needs a host link, which " + at.target().name + " lacks");
  }
  const double raw = at.segment(segment).input_bytes;
  Copy& c = input_copy(at, segment, input, held.copies);
  c.created = std::min(c.created, seg.first_layer);
  c.released_at = std::max(c.released_at, until);
  c.fetched_by = std::max(c.fetched_by, seg.last_layer);
  c.uses.push_back({ix.layer(seg.first_layer).recompute_at, seg.last_layer, raw, raw});
}

Held hold(const AtBatch& at, const Assignment& a) {
  const Index& ix = *at.index;
  if (a.slots.size() != ix.slots.size() || a.segments.size() != ix.segments.size()) {
    throw std::invalid_argument("assignment does not match the plan space");
  }
  const SlotStrategies strategies(a.slots);
  Held h;
  h.storages.resize(ix.storages.size());
  for (const auto& s : a.segments) h.recomputed.push_back(s.recompute);
  for (int j = 0; j < ix.layer_count(); ++j) h.runs_moms.push_back(runs_moms(ix, j, strategies, h.recomputed));
  for (int c = 0; c < static_cast<int>(ix.cores.size()); ++c) {
    h.cores_recomputed.push_back(core_recomputed(ix, c, strategies, h.recomputed));
  }
  h.lm_heads_recomputed.assign(ix.lm_heads.size(), false);
  std::vector<TensorStrategy> per_slot;
  for (size_t g = 0; g < ix.storages.size(); ++g) {
    per_slot.clear();
    for (int i : ix.storages[g].slots) per_slot.push_back(strategies.of(i));
    const int core = ix.storage_entries[g].core;
    hold_slots(at, static_cast<int>(g), per_slot, h.recomputed, core >= 0 && h.cores_recomputed[static_cast<size_t>(core)],
               h.storages[g], h.lm_heads_recomputed);
  }
  for (int i = 0; i < static_cast<int>(ix.slots.size()); ++i) {
    const int output = inverted_output_storage(ix, i, strategies, h.recomputed);
    if (output >= 0) hold_inverted_output(at, i, strategies, h.recomputed, h.storages[static_cast<size_t>(output)]);
  }
  for (size_t s = 0; s < ix.segments.size(); ++s) {
    if (h.recomputed[s]) {
      hold_segment_input(at, static_cast<int>(s), a.segments[s].input,
                         h.storages[static_cast<size_t>(ix.segments[s].input_storage)]);
    }
  }
  return h;
}

}  // namespace papaya::model::plan_space
