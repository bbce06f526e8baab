// The bytes a plan holds at each point of the timeline.
#include "model/plan_space/internal/timeline.h"

#include <algorithm>

#include "model/plan_space/internal/stored_scratch.h"
#include "model/strategy_table.h"

namespace papaya::model {
namespace plan_space {

void add_storage(const AtBatch& at, int storage, const StorageHeld& held, double sign, Changes& out,
                 std::vector<StorageChange>* kinds) {
  const Index& ix = *at.index;
  const int n = ix.layer_count();
  const int first_backward = n;  // the first point after forward
  using Kind = StorageChange::Kind;
  const auto add_as = [&](Kind kind, const TensorStrategy& strategy, double bytes, int from, int to) {
    if (from > to || bytes == 0) return;
    out.push_back({from, to, sign * bytes});
    if (kinds) kinds->push_back({kind, strategy});
  };
  const Storage& st = ix.storage(storage);
  std::vector<std::pair<int, int>> intervals = held.raw;
  if (!st.slots.empty()) {
    // Keep's figures already hold the storage, at its own bytes (a profile
    // counts the tensors', on CUDA too).
    add_as(Kind::keep_storage, {}, -at.storage_bytes(storage), ix.layer(st.first_layer).forward_at,
           ix.storage_entry(storage).released_at);
  }
  for (const Copy& c : held.copies) {
    const auto add = [&](double bytes, int from, int to) { add_as(Kind::copy, c.strategy, bytes, from, to); };
    const int created_at = ix.layer(c.created).forward_at;
    if (c.strategy.swap) {
      const int forward_to = ix.layer(std::min(c.created + 1, n - 1)).forward_at;
      if (row_of(c.strategy.form).encoding == Encoding::raw) {
        intervals.push_back({created_at, forward_to});  // the raw storage itself is what is copied out
      } else {
        add(c.device_bytes, created_at, forward_to);
      }
      const int back_from = c.fetched_by + 1 < n ? ix.layer(c.fetched_by + 1).backward_at : first_backward;
      add(c.device_bytes, back_from, c.released_at);
    } else {
      add(c.device_bytes, created_at, c.released_at);
    }
    if (!is_packed(c.strategy)) continue;
    // A slot's copy (not a recomputed segment's input) takes its share of
    // what storing did to its layers' passes.
    const auto slot_use = [](const Use& u) { return u.of_slot; };
    if (std::any_of(c.uses.begin(), c.uses.end(), slot_use)) {
      add_as(Kind::stored_scratch, c.strategy, at.layer(c.created).stored_forward.share(c.packed_from), created_at, created_at);
    }
    add_as(Kind::scratch, c.strategy, pack_scratch_bytes(at, c), created_at, created_at);
    for (const Use& u : c.uses) {
      add_as(Kind::scratch, c.strategy, restore_bytes(at, c, u), u.point, u.point);
      if (slot_use(u))
        add_as(Kind::stored_scratch, c.strategy, (at.layer(u.charged_to).*stored_shift_of_use(ix, u)).share(u.raw_bytes), u.point,
               u.point);
    }
  }
  std::sort(intervals.begin(), intervals.end());
  const double raw = at.allocated_storage(storage);
  for (size_t k = 0; k < intervals.size();) {
    const int from = intervals[k].first;
    int to = intervals[k].second;
    for (++k; k < intervals.size() && intervals[k].first <= to + 1; ++k) to = std::max(to, intervals[k].second);
    add_as(Kind::raw, {}, raw, from, to);
  }
}

void add_held_gradient(const AtBatch& at, int segment, Changes& out) {
  const Index& ix = *at.index;
  const Segment& seg = ix.segment(segment);
  const double bytes = held_gradient_bytes(at, segment);
  if (bytes > 0) {
    out.push_back({ix.layer(seg.last_layer).backward_at + 1, ix.layer(seg.first_layer).backward_at, bytes});
  }
}

void add_parameter_copies(const AtBatch& at, const std::vector<bool>& runs_moms, const std::vector<bool>& recomputed,
                          Changes& out) {
  const Index& ix = *at.index;
  // Under ZeRO-3 a layer's weights are gathered again for its backward and it
  // casts them again there (FSDP frees the unsharded half-type weights after
  // forward): no copy is held between the passes.
  const DataParallel& world = at.data_parallel();
  const bool regathered = world.active() && world.zero_stage == 3;
  for (size_t j = 0; j < ix.layers.size(); ++j) {
    const LayerEntry& layer = ix.layers[j];
    const double copy = at.world->parameter_copy_bytes[j];
    if (copy == 0) continue;
    int until = -1;
    if (!ix.active(static_cast<int>(j), recomputed)) {
      until = layer.recompute_at - 1;
    } else if (runs_moms[j] || regathered) {
      until = layer.backward_at - 1;
    }
    const int from = layer.forward_at + 1;
    if (from <= until) out.push_back({from, until, -copy});
  }
}

void add_lm_head_chunks(const AtBatch& at, int which, Changes& out) {
  const Index& ix = *at.index;
  const LmHead& lm_head = ix.lm_heads[static_cast<size_t>(which)];
  const double chunk_batch = at.lm_head_chunk_batches[static_cast<size_t>(which)];
  const LayerFit& head = ix.fit(lm_head.layer);
  const double batch = static_cast<double>(at.batch);
  const double fewer = chunk_batch - batch;
  const double forward_slope = std::max(0.0, head.forward_peak.per_sample - head.forward_start.per_sample);
  const double backward_slope = std::max(0.0, head.backward_peak.per_sample - head.backward_start.per_sample);
  const int f = ix.layer(lm_head.layer).forward_at, b = ix.layer(lm_head.layer).backward_at;
  const double chunk_logprobs = at.slot(lm_head.logprobs_slot).bytes * chunk_batch / batch;
  out.push_back({f, f, forward_slope * fewer});
  // Keep's backward starts before the head's own window: the loss's
  // gradient of all the logprobs at once (autograd's first node); the
  // chunked backward makes a chunk's at a time, inside the window.
  if (b > 0 && ix.points[static_cast<size_t>(b - 1)].phase == Phase::backward_gap &&
      ix.points[static_cast<size_t>(b - 1)].layer == lm_head.layer) {
    out.push_back({b - 1, b - 1, std::max(0.0, head.backward_gap_peak.per_sample - head.backward_start.per_sample) * fewer});
  }
  // The chunked backward sums the trained weight's fp32 gradient in place
  // from its first chunk on; keep's makes it after its peak. From its second
  // chunk on it also holds its input's gradient over every row, which keep's
  // makes after its peak too.
  const double weight_gradient = static_cast<double>(head.trainable_bytes() + head.shared_trainable_bytes);
  const double input_gradient = lm_head.input_slot >= 0 && batch > chunk_batch ? at.slot(lm_head.input_slot).bytes : 0;
  out.push_back({b, b,
                 backward_slope * fewer + at.target().allocated(chunk_logprobs) + at.target().allocated(weight_gradient) +
                     at.target().allocated(input_gradient)});
}

std::vector<double> bytes_at(const AtBatch& at, const Held& h) {
  const Index& ix = *at.index;
  Changes changes;
  for (size_t g = 0; g < ix.storages.size(); ++g) add_storage(at, static_cast<int>(g), h.storages[g], 1, changes);
  for (size_t s = 0; s < ix.segments.size(); ++s) {
    if (h.recomputed[s]) add_held_gradient(at, static_cast<int>(s), changes);
  }
  add_parameter_copies(at, h.runs_moms, h.recomputed, changes);
  for (size_t head = 0; head < h.lm_heads_recomputed.size(); ++head) {
    if (h.lm_heads_recomputed[head]) add_lm_head_chunks(at, static_cast<int>(head), changes);
  }
  std::vector<double> bytes = summed(at, changes);
  for (size_t p = 0; p < bytes.size(); ++p) bytes[p] += at.keep_bytes[p];
  return bytes;
}

std::vector<double> summed(const AtBatch& at, const Changes& changes) {
  const size_t points = at.index->points.size();
  std::vector<double> diff(points + 1, 0.0);
  for (const Change& c : changes) {
    diff[static_cast<size_t>(c.from)] += c.bytes;
    diff[static_cast<size_t>(c.to) + 1] -= c.bytes;
  }
  std::vector<double> bytes(points);
  double running = 0;
  for (size_t p = 0; p < points; ++p) {
    running += diff[p];
    bytes[p] = running;
  }
  return bytes;
}

Estimate memory_of(const AtBatch& at, const Held& h) {
  const Index& ix = *at.index;
  const std::vector<double> bytes = bytes_at(at, h);
  Estimate e;
  e.peak_bytes = -1;
  for (size_t p = 0; p < ix.points.size(); ++p) {
    const TimelinePoint& point = ix.points[p];
    if (point.phase == Phase::recompute && !h.recomputed[static_cast<size_t>(point.segment)]) continue;
    if (bytes[p] > e.peak_bytes) {
      e.peak_bytes = bytes[p];
      e.peak_at = point;
    }
  }
  e.peak_bytes += at.unattributed_bytes;
  if (at.optimizer_peak_bytes > e.peak_bytes) {
    e.peak_bytes = at.optimizer_peak_bytes;
    e.peak_in_optimizer_step = true;
  }
  for (const StorageHeld& held : h.storages) {
    for (const Copy& c : held.copies) {
      if (c.strategy.swap) e.host_bytes += c.host_bytes;
    }
  }
  return e;
}

}  // namespace plan_space
}  // namespace papaya::model
