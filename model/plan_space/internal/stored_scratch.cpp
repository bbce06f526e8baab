// What storing a layer's slots does to its passes beyond its copies.
#include "model/plan_space/internal/stored_scratch.h"

#include <algorithm>

#include "model/plan_space/internal/pricing.h"

namespace papaya::model::plan_space {

StoredShift LayerAtBatch::*stored_shift_of_use(const Index& index, const Use& u) {
  return u.point == index.layer(u.charged_to).backward_at ? &LayerAtBatch::stored_backward : &LayerAtBatch::stored_backward_gap;
}

void price_stored_scratch(AtBatch& at) {
  const Index& ix = *at.index;
  const Target& target = at.target();
  if (ix.stored_step.empty() || target.codecs.empty()) return;
  // What add_storage adds for the stored step's packed copies, in `bytes`:
  // at the F point of the layer making each, the copy and its packing's
  // scratch; where each is read in backward, the restored tensor and its
  // scratch; at a backward gap, also the copy in place of the raw storage
  // that keep frees there (and the layer's backward start holds neither).
  std::vector<TensorStrategy> per_slot;
  for (size_t g = 0; g < ix.storages.size(); ++g) {
    per_slot.clear();
    for (int i : ix.storages[g].slots) per_slot.push_back(ix.stored_step[static_cast<size_t>(i)]);
    for (const Copy& c : copies_of(at, static_cast<int>(g), per_slot)) {
      if (!is_packed(c.strategy)) continue;
      StoredShift& made = at.layers[static_cast<size_t>(c.created)].stored_forward;
      made.bytes += c.device_bytes + pack_scratch_bytes(at, c);
      made.raw += c.packed_from;
      for (const Use& u : c.uses) {
        StoredShift& shift = at.layers[static_cast<size_t>(u.charged_to)].*stored_shift_of_use(ix, u);
        shift.bytes += restore_bytes(at, c, u);
        shift.raw += u.raw_bytes;
      }
      if (c.released_at != ix.layer(ix.storages[g].first_layer).backward_at) {
        at.layers[static_cast<size_t>(ix.storages[g].first_layer)].stored_backward_gap.bytes +=
            c.device_bytes - at.storage_bytes(static_cast<int>(g));
      }
    }
  }
  // A layer storing a slot runs its MOM Function, which casts its
  // parameters again in backward instead of holding copies from its F point
  // (add_parameter_copies): the timeline's B point is that copy above the
  // backward's start.
  std::vector<bool> moms(ix.layers.size(), false);
  for (size_t i = 0; i < ix.slots.size(); ++i) {
    if (!ix.stored_step[i].is_keep()) moms[static_cast<size_t>(ix.slots[i].layer)] = true;
  }
  for (size_t j = 0; j < ix.layers.size(); ++j) {
    if (moms[j]) at.layers[j].stored_backward.bytes += at.world->parameter_copy_bytes[j];
  }
  // A layer whose slot the stored step recomputes (the LM head's
  // log-probabilities, chunk by chunk) measured that too, which the
  // timeline prices on its own (add_lm_head_chunks): no shift.
  std::vector<bool> recomputing(ix.layers.size(), false);
  for (size_t i = 0; i < ix.slots.size(); ++i) {
    if (recomputes(ix.stored_step[i].form)) recomputing[static_cast<size_t>(ix.slots[i].layer)] = true;
  }
  // Each is what the measured shift is beyond those.
  const double batch = static_cast<double>(at.batch);
  for (size_t j = 0; j < ix.layers.size(); ++j) {
    LayerAtBatch& layer = at.layers[j];
    if (recomputing[j]) {
      layer.stored_forward = layer.stored_backward_gap = layer.stored_backward = StoredShift{};
      continue;
    }
    const LayerFit& fit = ix.fit(static_cast<int>(j));
    layer.stored_forward.bytes = stored_forward_shift_at(fit, batch) - layer.stored_forward.bytes;
    layer.stored_backward_gap.bytes = stored_backward_gap_shift_at(fit, batch) - layer.stored_backward_gap.bytes;
    layer.stored_backward.bytes = stored_backward_shift_at(fit, batch) - layer.stored_backward.bytes;
  }
}

}  // namespace papaya::model::plan_space
