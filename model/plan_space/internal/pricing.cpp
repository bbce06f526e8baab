// What each option of a storage or a segment's input costs at the space's batch.
#include "model/plan_space/internal/pricing.h"

#include <algorithm>

#include "model/plan_space/types.h"
#include "model/strategy_table.h"

namespace papaya::model {
namespace plan_space {
namespace {

// How many alike layers `layer` stands for (LayerDescription::repeats): each
// packs and restores its own tensors, one layer's at a time. A segment's
// input is packed by no layer of the model (Copy::created unset): one.
double repeats(const AtBatch& at, int layer) {
  const auto& layers = at.index->model->layers;
  return layer >= 0 && static_cast<size_t>(layer) < layers.size() ? layers[static_cast<size_t>(layer)].repeats : 1;
}

TensorStrategy unswapped(TensorStrategy s) {
  s.swap = false;
  return s;
}

// The copy of `view` stored as `s` among `copies` (added if none is), grown
// to hold a tensor of `numel` values; head_numel: values per attention head,
// for headwise groups (0: one head); `repeats`: the alike layers' tensors it
// stands for, each stored (its groups and allocator blocks) on its own.
Copy& copy_for(const Target& target, std::vector<Copy>& copies, const TensorStrategy& s, int view, SlotKind kind, int64_t numel,
               int element_size, double raw, int64_t head_numel = 0, int repeats = 1) {
  auto it = std::find_if(copies.begin(), copies.end(), [&](const Copy& c) { return c.strategy == s && c.view == view; });
  if (it == copies.end()) {
    copies.push_back(Copy{});
    it = copies.end() - 1;
    it->strategy = s;
    it->view = view;
  }
  const int64_t one = numel / repeats;
  const double device = static_cast<double>(device_bytes(kind, one, element_size, unswapped(s), head_numel));
  it->device_bytes = std::max(it->device_bytes, repeats * target.allocated(device));
  it->host_bytes = std::max(it->host_bytes, repeats * static_cast<double>(host_bytes(kind, one, element_size, s, head_numel)));
  it->packed_from = std::max(it->packed_from, raw);
  return *it;
}

}  // namespace

// The option that stores a storage (or a segment's input) as `copies`, its
// slots taking `per_slot`; `raw_bytes`: the whole storage as the allocator
// holds it (AtBatch::allocated_storage).
Option option(const AtBatch& at, const std::vector<Copy>& copies, const std::vector<TensorStrategy>& per_slot, double raw_bytes,
              int lm_head) {
  const Target& target = at.target();
  Option o;
  o.per_slot = per_slot;
  const auto has = [&](auto test) { return std::any_of(per_slot.begin(), per_slot.end(), test); };
  if (per_slot.empty() || has([](const TensorStrategy& s) { return s.is_keep(); })) {
    o.device_bytes += raw_bytes;
  }
  if (lm_head >= 0 && has([](const TensorStrategy& s) { return recomputes(s.form); })) {
    o.recompute_seconds = at.layer(at.index->lm_heads[static_cast<size_t>(lm_head)].layer).forward_s;
  }
  for (const Copy& c : copies) {
    if (c.strategy.swap) {
      o.host_bytes += c.host_bytes;
      o.link_seconds += c.host_bytes / target.d2h_bytes_per_s + c.host_bytes / target.h2d_bytes_per_s;
    } else {
      o.device_bytes += c.device_bytes;
    }
    o.codec_seconds += pack_seconds(at, c);
    for (const Use& u : c.uses) o.codec_seconds += use_seconds(at, c.strategy, u.charged_to, u.raw_bytes);
  }
  return o;
}

double pack_scratch_bytes(const AtBatch& at, const Copy& c) {
  const double scratch = at.target().codec(codec_bits(c.strategy)).pack_scratch(c.packed_from / repeats(at, c.created));
  return std::max(0.0, scratch - at.layer(c.created).forward_headroom);
}

double restore_bytes(const AtBatch& at, const Copy& c, const Use& u) {
  const double r = repeats(at, u.charged_to);
  const double scratch = at.target().codec(codec_bits(c.strategy)).unpack_scratch(u.raw_bytes / r);
  return at.target().allocated(u.transient_bytes / r) + std::max(0.0, scratch - at.layer(u.charged_to).backward_headroom);
}

double pack_seconds(const AtBatch& at, const Copy& c) {
  if (!is_packed(c.strategy)) return 0;
  const double r = repeats(at, c.created);
  return r * at.target().codec(codec_bits(c.strategy)).pack_seconds(c.packed_from / r);
}

double use_seconds(const AtBatch& at, const TensorStrategy& s, int layer, double raw_bytes) {
  const double r = repeats(at, layer);
  const double unpack = is_packed(s) ? r * at.target().codec(codec_bits(s)).unpack_seconds(raw_bytes / r) : 0;
  if (!row_of(s.form).derivative_from_output) return unpack;
  return unpack + at.index->layer(layer).invert_seconds_per_byte * raw_bytes;
}

std::vector<Copy> copies_of(const AtBatch& at, int storage, const std::vector<TensorStrategy>& per_slot) {
  const Index& ix = *at.index;
  const Storage& st = ix.storage(storage);
  std::vector<Copy> copies;
  for (size_t k = 0; k < st.slots.size(); ++k) {
    const TensorStrategy& s = per_slot[k];
    if (s.is_keep() || recomputes(s.form)) continue;
    const int i = st.slots[k];
    const Slot& slot = ix.slot(i);
    const SlotAtBatch& size = at.slot(i);
    const SavedTensorProfile& tensor = *ix.slot_entry(i).tensor;
    // A headwise tensor's heads are its last two dimensions, (heads, tokens, .) per sample.
    const auto& shape = tensor.sample_shape;
    const int64_t head_numel = shape.size() >= 3 ? shape[shape.size() - 1] * shape[shape.size() - 2] : 0;
    Copy& c = copy_for(at.target(), copies, s, ix.slot_entry(i).view, slot.kind, size.numel, tensor.element_size, size.bytes,
                       head_numel, static_cast<int>(repeats(at, slot.layer)));
    c.created = std::min(c.created, slot.layer);
    const int used_at = ix.slot_entry(i).used_at;
    c.released_at = std::max(c.released_at, used_at);
    c.fetched_by = std::max(c.fetched_by, slot.layer);
    const bool mask = row_of(s.form).encoding == Encoding::mask || slot.kind == SlotKind::mask;
    const double transient = mask ? static_cast<double>(size.numel) : size.bytes;  // a mask unpacks to bools
    c.uses.push_back({used_at, slot.layer, size.bytes, transient, true});
  }
  return copies;
}

Copy& input_copy(const AtBatch& at, int segment, const TensorStrategy& s, std::vector<Copy>& copies) {
  const SavedTensorProfile& input = *at.index->segment_entry(segment).input;
  const SegmentAtBatch& size = at.segment(segment);
  return copy_for(at.target(), copies, s, -1, input.kind, size.input_numel, input.element_size, size.input_bytes);
}

double held_gradient_bytes(const AtBatch& at, int segment) {
  const double per_sample = at.index->segment(segment).held_gradient_bytes_per_sample;
  return per_sample > 0 ? at.target().allocated(per_sample * static_cast<double>(at.batch)) : 0;
}

}  // namespace plan_space
}  // namespace papaya::model
