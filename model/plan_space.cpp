#include "model/plan_space.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>

#include "model/error.h"

namespace papaya::model {
namespace {

double at_batch(double per_sample, bool grows, double batch) { return grows ? per_sample * batch : per_sample; }

int64_t numel_at(const SavedTensorProfile& t, double batch) {
  return static_cast<int64_t>(std::llround(at_batch(t.numel_per_sample, t.per_sample, batch)));
}

// The codec's bit width for a stored form (masks and inverted GELU inputs: 1).
int codec_bits(const TensorStrategy& s) { return s.form == Form::inverted ? 1 : s.bits; }

bool is_packed(const TensorStrategy& s) { return s.form == Form::quantized || s.form == Form::adaptive || s.form == Form::inverted; }

const char* storage_candidates[] = {"quantize-8",      "quantize-4",      "quantize-2",      "adaptive-4",
                                    "invert",          "recompute",       "swap",            "quantize-8+swap",
                                    "quantize-4+swap", "quantize-2+swap", "adaptive-4+swap"};
const char* input_candidates[] = {"quantize-8", "quantize-4", "quantize-2", "swap", "quantize-8+swap", "quantize-4+swap",
                                  "quantize-2+swap"};

// Adds `bytes` to the points from..to of a difference array.
void add(std::vector<double>& diff, double bytes, int from, int to) {
  if (from > to || bytes == 0) return;
  diff[static_cast<size_t>(from)] += bytes;
  diff[static_cast<size_t>(to) + 1] -= bytes;
}

}  // namespace

const char* to_string(Phase phase) {
  switch (phase) {
    case Phase::forward: return "forward";
    case Phase::recompute: return "recompute";
    case Phase::backward: return "backward";
  }
  return "?";
}

// One use of a stored copy in backward: dequantized (if packed) at `point`,
// timed in the backward of `charged_to`.
struct Use {
  int point = 0, charged_to = 0;
  double raw_bytes = 0;        // what dequantizing reads back into
  double transient_bytes = 0;  // what it allocates
};

// One stored form of a storage under a plan (not raw on the device).
struct PlanSpace::Copy {
  TensorStrategy strategy;  // swap included
  double device_bytes = 0;  // the stored form, allocator-rounded
  double host_bytes = 0;    // swapped: in pinned host memory
  double packed_from = 0;   // raw bytes quantized in forward
  int created = INT_MAX;    // the layer whose forward stores it
  int first_user = INT_MAX; // released after this layer's backward
  int fetched_by = -1;      // the layer whose backward needs it first (prefetch)
  std::vector<Use> uses;
};

// What an assignment keeps: per storage its copies and the point intervals
// where its raw storage is held.
struct PlanSpace::Held {
  std::vector<std::vector<Copy>> copies;
  std::vector<std::vector<std::pair<int, int>>> raw;
  std::vector<bool> recomputed;  // per segment
  bool lm_head_recomputed = false;
};

PlanSpace::PlanSpace(const LayerModel& model, const Target& target, int64_t batch)
    : model_(model), target_(target), batch_(batch) {
  if (batch < 1) throw InputError("batch " + std::to_string(batch) + ": a batch has at least one sample");
  const double b = static_cast<double>(batch);
  const int n = static_cast<int>(model.layers.size());

  std::map<std::string, int> segment_index;
  for (const auto& s : model.segments) {
    segment_index[s.path] = static_cast<int>(segments_.size());
    Segment view;
    view.path = s.path;
    view.first_layer = INT_MAX;
    view.last_layer = -1;
    segments_.push_back(view);
  }
  layer_segment_.assign(static_cast<size_t>(n), -1);
  for (int j = 0; j < n; ++j) {
    const auto& seg = model.layers[static_cast<size_t>(j)].segment;
    if (seg.empty()) continue;
    const int s = segment_index.at(seg);
    layer_segment_[static_cast<size_t>(j)] = s;
    segments_[static_cast<size_t>(s)].first_layer = std::min(segments_[static_cast<size_t>(s)].first_layer, j);
    segments_[static_cast<size_t>(s)].last_layer = std::max(segments_[static_cast<size_t>(s)].last_layer, j);
  }

  // The timeline and the keep step's bytes at each point.
  forward_at_.assign(static_cast<size_t>(n), -1);
  backward_at_.assign(static_cast<size_t>(n), -1);
  recompute_at_.assign(static_cast<size_t>(n), -1);
  for (int j = 0; j < n; ++j) {
    forward_at_[static_cast<size_t>(j)] = static_cast<int>(points_.size());
    points_.push_back({Phase::forward, j, layer_segment_[static_cast<size_t>(j)]});
    keep_bytes_.push_back(model.layers[static_cast<size_t>(j)].forward_peak.at(b));
  }
  for (int j = n - 1; j >= 0; --j) {
    const int s = layer_segment_[static_cast<size_t>(j)];
    if (s >= 0 && segments_[static_cast<size_t>(s)].last_layer == j) {
      const double start = model.layers[static_cast<size_t>(j)].backward_start.at(b);
      for (int r = segments_[static_cast<size_t>(s)].first_layer; r <= j; ++r) {
        const auto& layer = model.layers[static_cast<size_t>(r)];
        recompute_at_[static_cast<size_t>(r)] = static_cast<int>(points_.size());
        points_.push_back({Phase::recompute, r, s});
        keep_bytes_.push_back(start + layer.forward_peak.at(b) - layer.forward_start.at(b));
      }
    }
    backward_at_[static_cast<size_t>(j)] = static_cast<int>(points_.size());
    points_.push_back({Phase::backward, j, s});
    keep_bytes_.push_back(model.layers[static_cast<size_t>(j)].backward_peak.at(b));
  }

  // Slots and the storages they share.
  std::map<std::string, int> storage_index, slot_index;
  for (int j = 0; j < n; ++j) {
    const auto& layer = model.layers[static_cast<size_t>(j)];
    for (const auto& t : layer.saved) {
      const std::string key = tensor_key(layer.path, t.slot);
      const std::string storage_key = t.storage.empty() ? key : t.storage;
      const double raw = static_cast<double>(numel_at(t, b)) * t.element_size;
      auto [it, added] = storage_index.emplace(storage_key, static_cast<int>(storages_.size()));
      if (added) {
        Storage st;
        st.key = storage_key;
        st.first_layer = j;
        storages_.push_back(st);
      }
      Storage& st = storages_[static_cast<size_t>(it->second)];
      const double whole = at_batch(t.storage_bytes_per_sample, t.per_sample, b);
      st.raw_bytes = std::max({st.raw_bytes, whole, raw});
      st.last_layer = j;
      slot_index[key] = static_cast<int>(slots_.size());
      st.slots.push_back(static_cast<int>(slots_.size()));
      slots_.push_back({key, j, it->second, t.kind, raw});
      if (layer.kind == "lm_head" && t.slot == "logprobs") {
        lm_head_ = j;
        lm_head_logprobs_slot_ = static_cast<int>(slots_.size()) - 1;
        double rows = 1;
        for (size_t d = 0; d + 1 < t.sample_shape.size(); ++d) rows *= static_cast<double>(t.sample_shape[d]);
        lm_head_chunk_batch_ = std::min(b, static_cast<double>(lm_head_chunk_rows) / rows);
      }
    }
  }
  const auto unsaved_storage = [&](const std::string& key, double raw_bytes, int layer) {
    Storage st;
    st.key = key;
    st.first_layer = st.last_layer = layer;
    st.raw_bytes = raw_bytes;
    storages_.push_back(st);
    return static_cast<int>(storages_.size()) - 1;
  };
  for (size_t s = 0; s < model.segments.size(); ++s) {
    const auto& input = model.segments[s].input;
    if (!input.storage.empty()) {
      segment_input_storage_.push_back(slots_[static_cast<size_t>(slot_index.at(input.storage))].storage);
    } else {
      const double raw = std::max(at_batch(input.storage_bytes_per_sample, input.per_sample, b),
                                  static_cast<double>(numel_at(input, b)) * input.element_size);
      segment_input_storage_.push_back(unsaved_storage(segments_[s].path + ":input", raw, segments_[s].first_layer));
    }
  }
  output_storage_.assign(static_cast<size_t>(n), -1);
  output_consumer_slot_.assign(static_cast<size_t>(n), -1);
  for (int j = 0; j < n; ++j) {
    const auto& layer = model.layers[static_cast<size_t>(j)];
    if (layer.kind != "gelu" && layer.kind != "silu") continue;
    if (!layer.output_saved_by.empty()) {
      const int consumer = slot_index.at(layer.output_saved_by.front());
      output_consumer_slot_[static_cast<size_t>(j)] = consumer;
      output_storage_[static_cast<size_t>(j)] = slots_[static_cast<size_t>(consumer)].storage;
    } else {
      output_storage_[static_cast<size_t>(j)] = unsaved_storage(layer.path + ":output", layer.output_bytes_per_sample * b, j);
    }
  }

  // Times at this batch on the target.
  for (int j = 0; j < n; ++j) {
    forward_s_.push_back(target.forward_seconds[static_cast<size_t>(j)].at(b));
    backward_s_.push_back(target.backward_seconds[static_cast<size_t>(j)].at(b));
  }
  for (size_t s = 0; s < segments_.size(); ++s) recompute_s_.push_back(target.recompute_seconds[s].at(b));
  optimizer_s_ = target.optimizer_seconds.at(b);
  rest_s_ = target.rest_seconds.at(b);
  unattributed_bytes_ = model.unattributed_peak.at(b);

  // The options of each storage: keep, then each candidate in each slot's natural form.
  const auto layout = model.layout();
  std::vector<TensorStrategy> candidates;
  for (const char* name : storage_candidates) candidates.push_back(parse_tensor_strategy(name, "candidate"));
  for (size_t g = 0; g < storages_.size(); ++g) {
    Storage& st = storages_[g];
    const std::vector<TensorStrategy> keep(st.slots.size());
    st.options.push_back(option({}, keep, st.raw_bytes));
    for (const TensorStrategy& asked : candidates) {
      if (asked.swap && !target.has_host_link()) continue;
      std::vector<TensorStrategy> per_slot;
      for (int i : st.slots) {
        const Slot& slot = slots_[static_cast<size_t>(i)];
        const LayerDesc& desc = layout.layers[static_cast<size_t>(slot.layer)];
        const SlotDesc& slot_desc = *desc.find_slot(slot.key.substr(slot.key.rfind(':') + 1));
        const TensorStrategy s = adapt_to_slot(desc, slot_desc, asked);
        per_slot.push_back(why_not(desc, slot_desc, s) ? TensorStrategy{} : s);
      }
      const bool changes = std::any_of(per_slot.begin(), per_slot.end(), [](const auto& s) { return !s.is_keep(); });
      const bool seen = std::any_of(st.options.begin(), st.options.end(), [&](const Option& o) { return o.per_slot == per_slot; });
      if (!changes || seen) continue;
      st.options.push_back(option(copies_of(static_cast<int>(g), per_slot), per_slot, st.raw_bytes));
      st.options.back().strategy = asked;
    }
  }

  // The segments' views.
  for (size_t s = 0; s < segments_.size(); ++s) {
    Segment& view = segments_[s];
    view.recompute_seconds = recompute_s_[s];
    for (const auto& st : storages_) {
      if (st.slots.empty()) continue;
      bool inside_any = false, inside_all = true;
      for (int i : st.slots) {
        const bool inside = layer_segment_[static_cast<size_t>(slots_[static_cast<size_t>(i)].layer)] == static_cast<int>(s);
        inside_any = inside_any || inside;
        inside_all = inside_all && inside;
      }
      if (inside_any) view.rematerialized_bytes += target.allocated(st.raw_bytes);
      if (inside_all) view.freed_bytes += target.allocated(st.raw_bytes);
    }
    const auto& input = model.segments[s].input;
    const int64_t numel = numel_at(input, b);
    const double raw = static_cast<double>(numel) * input.element_size;
    view.input_options.push_back(option({}, {TensorStrategy{}}, storages_[static_cast<size_t>(segment_input_storage_[s])].raw_bytes));
    for (const char* name : input_candidates) {
      const TensorStrategy s_in = parse_segment_strategy(std::string("recompute+") + name, "candidate").input;
      if (s_in.swap && !target.has_host_link()) continue;
      if (s_in.form != Form::raw && input.kind != SlotKind::activation) continue;
      Copy copy;
      copy.strategy = s_in;
      TensorStrategy stored = s_in;
      stored.swap = false;
      copy.device_bytes = target.allocated(static_cast<double>(device_bytes(input.kind, numel, input.element_size, stored)));
      copy.host_bytes = static_cast<double>(host_bytes(input.kind, numel, input.element_size, s_in));
      copy.packed_from = raw;
      copy.uses.push_back({0, 0, raw, raw});
      Option o = option({copy}, {s_in}, raw);
      o.strategy = s_in;
      view.input_options.push_back(o);
    }
  }
}

std::vector<PlanSpace::Copy> PlanSpace::copies_of(int storage, const std::vector<TensorStrategy>& per_slot) const {
  const Storage& st = storages_[static_cast<size_t>(storage)];
  std::vector<Copy> copies;
  for (size_t k = 0; k < st.slots.size(); ++k) {
    const TensorStrategy& s = per_slot[k];
    if (s.is_keep() || s.form == Form::recomputed) continue;
    const Slot& slot = slots_[static_cast<size_t>(st.slots[k])];
    const auto& saved = model_.layers[static_cast<size_t>(slot.layer)].saved;
    const auto& t = *std::find_if(saved.begin(), saved.end(), [&](const auto& x) {
      return tensor_key(model_.layers[static_cast<size_t>(slot.layer)].path, x.slot) == slot.key;
    });
    const int64_t numel = numel_at(t, static_cast<double>(batch_));
    auto it = std::find_if(copies.begin(), copies.end(), [&](const Copy& c) { return c.strategy == s; });
    if (it == copies.end()) {
      copies.push_back(Copy{});
      it = copies.end() - 1;
      it->strategy = s;
    }
    TensorStrategy stored = s;
    stored.swap = false;
    it->device_bytes = std::max(it->device_bytes, target_.allocated(static_cast<double>(device_bytes(slot.kind, numel, t.element_size, stored))));
    it->host_bytes = std::max(it->host_bytes, static_cast<double>(host_bytes(slot.kind, numel, t.element_size, s)));
    it->packed_from = std::max(it->packed_from, slot.raw_bytes);
    it->created = std::min(it->created, slot.layer);
    it->first_user = std::min(it->first_user, slot.layer);
    it->fetched_by = std::max(it->fetched_by, slot.layer);
    const double transient = s.form == Form::inverted ? static_cast<double>(numel) : slot.raw_bytes;
    it->uses.push_back({backward_at_[static_cast<size_t>(slot.layer)], slot.layer, slot.raw_bytes, transient});
  }
  return copies;
}

double PlanSpace::codec_pack_seconds(const TensorStrategy& s, double raw_bytes) const {
  return is_packed(s) ? raw_bytes / target_.codec(codec_bits(s)).pack_bytes_per_s : 0;
}

double PlanSpace::codec_unpack_seconds(const TensorStrategy& s, double raw_bytes) const {
  return is_packed(s) ? raw_bytes / target_.codec(codec_bits(s)).unpack_bytes_per_s : 0;
}

PlanSpace::Option PlanSpace::option(const std::vector<Copy>& copies, const std::vector<TensorStrategy>& per_slot,
                                    double raw_bytes) const {
  Option o;
  o.per_slot = per_slot;
  const auto has = [&](auto test) { return std::any_of(per_slot.begin(), per_slot.end(), test); };
  if (per_slot.empty() || has([](const TensorStrategy& s) { return s.is_keep(); })) o.device_bytes += target_.allocated(raw_bytes);
  if (has([](const TensorStrategy& s) { return s.form == Form::recomputed; })) o.recompute_seconds = forward_s_[static_cast<size_t>(lm_head_)];
  for (const Copy& c : copies) {
    if (c.strategy.swap) {
      o.host_bytes += c.host_bytes;
      o.link_seconds += c.host_bytes / target_.d2h_bytes_per_s + c.host_bytes / target_.h2d_bytes_per_s;
    } else {
      o.device_bytes += c.device_bytes;
    }
    o.codec_seconds += codec_pack_seconds(c.strategy, c.packed_from);
    for (const Use& u : c.uses) o.codec_seconds += codec_unpack_seconds(c.strategy, u.raw_bytes);
  }
  return o;
}

PlanSpace::Held PlanSpace::hold(const Assignment& a) const {
  if (a.slots.size() != slots_.size() || a.segments.size() != segments_.size()) {
    throw std::invalid_argument("assignment does not match the plan space");
  }
  Held h;
  h.copies.resize(storages_.size());
  h.raw.resize(storages_.size());
  for (const auto& s : a.segments) h.recomputed.push_back(s.recompute);
  const auto active = [&](int layer) {
    const int s = layer_segment_[static_cast<size_t>(layer)];
    return s < 0 || !h.recomputed[static_cast<size_t>(s)];
  };
  // The raw storage held from a user's forward (no earlier than the storage's
  // first saver, before which it is the forward's own) to its backward.
  const auto raw_user = [&](int g, int layer) {
    const Storage& st = storages_[static_cast<size_t>(g)];
    const int from = st.slots.empty() ? layer + 1 : forward_at_[static_cast<size_t>(std::max(layer, st.first_layer))];
    h.raw[static_cast<size_t>(g)].push_back({from, backward_at_[static_cast<size_t>(layer)]});
  };

  for (size_t g = 0; g < storages_.size(); ++g) {
    const Storage& st = storages_[g];
    if (st.slots.empty()) continue;
    // While forward uses it, the storage is there whatever the plan.
    h.raw[g].push_back({forward_at_[static_cast<size_t>(st.first_layer)], forward_at_[static_cast<size_t>(st.last_layer)]});
    std::vector<TensorStrategy> stored;  // what copies_of makes copies of (keep: none)
    for (int i : st.slots) {
      const Slot& slot = slots_[static_cast<size_t>(i)];
      const TensorStrategy& s = a.slots[static_cast<size_t>(i)];
      stored.push_back(TensorStrategy{});
      if (!active(slot.layer)) {  // rematerialized by its segment's recompute
        h.raw[g].push_back({recompute_at_[static_cast<size_t>(slot.layer)], backward_at_[static_cast<size_t>(slot.layer)]});
        continue;
      }
      if (s.swap && !target_.has_host_link()) {
        throw InputError(slot.key + ": " + s.name() + " needs a host link, which " + target_.name +
                         " lacks (predict for a GPU with --hardware)");
      }
      if (s.form == Form::recomputed) h.lm_head_recomputed = true;
      if (s.is_keep()) raw_user(static_cast<int>(g), slot.layer);
      stored.back() = s;
    }
    h.copies[g] = copies_of(static_cast<int>(g), stored);
  }

  // An inverted GELU/SiLU uses its output as the slot saving it keeps it.
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& slot = slots_[i];
    if (a.slots[i].form != Form::inverted || !active(slot.layer)) continue;
    const int out = output_storage_[static_cast<size_t>(slot.layer)];
    const int consumer = output_consumer_slot_[static_cast<size_t>(slot.layer)];
    auto& copies = h.copies[static_cast<size_t>(out)];
    auto it = copies.end();
    if (consumer >= 0 && active(slots_[static_cast<size_t>(consumer)].layer)) {
      const TensorStrategy& s = a.slots[static_cast<size_t>(consumer)];
      it = std::find_if(copies.begin(), copies.end(), [&](const Copy& c) { return c.strategy == s; });
    }
    if (it == copies.end()) {  // the output is kept raw, by its consumer or by the layer itself
      raw_user(out, slot.layer);
      continue;
    }
    const double raw = slots_[static_cast<size_t>(consumer)].raw_bytes;
    it->first_user = std::min(it->first_user, slot.layer);
    it->uses.push_back({backward_at_[static_cast<size_t>(slot.layer)], slot.layer, raw, raw});
  }

  // A recomputed segment keeps its input.
  for (size_t s = 0; s < segments_.size(); ++s) {
    if (!h.recomputed[s]) continue;
    const Segment& view = segments_[s];
    const int g = segment_input_storage_[s];
    const TensorStrategy& s_in = a.segments[s].input;
    if (s_in.is_keep()) {
      raw_user(g, view.first_layer);
      continue;
    }
    if (s_in.swap && !target_.has_host_link()) {
      throw InputError(view.path + ": " + a.segments[s].name() + " needs a host link, which " + target_.name + " lacks");
    }
    const auto& input = model_.segments[s].input;
    const int64_t numel = numel_at(input, static_cast<double>(batch_));
    const double raw = static_cast<double>(numel) * input.element_size;
    auto& copies = h.copies[static_cast<size_t>(g)];
    auto it = std::find_if(copies.begin(), copies.end(), [&](const Copy& c) { return c.strategy == s_in; });
    if (it == copies.end()) {
      copies.push_back(Copy{});
      it = copies.end() - 1;
      it->strategy = s_in;
    }
    TensorStrategy stored = s_in;
    stored.swap = false;
    it->device_bytes = std::max(it->device_bytes, target_.allocated(static_cast<double>(device_bytes(input.kind, numel, input.element_size, stored))));
    it->host_bytes = std::max(it->host_bytes, static_cast<double>(host_bytes(input.kind, numel, input.element_size, s_in)));
    it->packed_from = std::max(it->packed_from, raw);
    it->created = std::min(it->created, view.first_layer);
    it->first_user = std::min(it->first_user, view.first_layer);
    it->fetched_by = std::max(it->fetched_by, view.last_layer);
    it->uses.push_back({recompute_at_[static_cast<size_t>(view.first_layer)], view.last_layer, raw, raw});
  }
  return h;
}

std::vector<double> PlanSpace::timeline(const Assignment& a) const { return bytes_at(hold(a)); }

std::vector<double> PlanSpace::bytes_at(const Held& h) const {
  const int n = static_cast<int>(model_.layers.size());
  const int first_backward = n;  // the first point after forward
  std::vector<double> diff(points_.size() + 1, 0.0);
  for (size_t g = 0; g < storages_.size(); ++g) {
    const Storage& st = storages_[g];
    auto intervals = h.raw[g];
    if (!st.slots.empty()) {
      // Keep's figures already hold the storage: allocator-rounded on a GPU,
      // exact where they come from a CPU.
      const double kept = target_.round_keep ? st.raw_bytes : target_.allocated(st.raw_bytes);
      add(diff, -kept, forward_at_[static_cast<size_t>(st.first_layer)], backward_at_[static_cast<size_t>(st.first_layer)]);
    }
    for (const Copy& c : h.copies[g]) {
      if (c.strategy.swap) {
        const int forward_from = forward_at_[static_cast<size_t>(c.created)];
        const int forward_to = forward_at_[static_cast<size_t>(std::min(c.created + 1, n - 1))];
        if (c.strategy.form == Form::raw) {
          intervals.push_back({forward_from, forward_to});  // the raw storage itself is what is copied out
        } else {
          add(diff, c.device_bytes, forward_from, forward_to);
        }
        const int back_from = c.fetched_by + 1 < n ? backward_at_[static_cast<size_t>(c.fetched_by + 1)] : first_backward;
        add(diff, c.device_bytes, back_from, backward_at_[static_cast<size_t>(c.first_user)]);
      } else {
        add(diff, c.device_bytes, forward_at_[static_cast<size_t>(c.created)], backward_at_[static_cast<size_t>(c.first_user)]);
      }
      if (!is_packed(c.strategy)) continue;
      for (const Use& u : c.uses) add(diff, target_.allocated(u.transient_bytes), u.point, u.point);
    }
    std::sort(intervals.begin(), intervals.end());
    const double raw = target_.allocated(st.raw_bytes);
    for (size_t k = 0; k < intervals.size();) {
      int from = intervals[k].first, to = intervals[k].second;
      for (++k; k < intervals.size() && intervals[k].first <= to + 1; ++k) to = std::max(to, intervals[k].second);
      add(diff, raw, from, to);
    }
  }
  if (h.lm_head_recomputed) {
    // The head's batch-proportional transients (logits, log-probabilities and
    // their gradients) shrink to one chunk; backward recomputes the chunk's
    // log-probabilities.
    const LayerFit& head = model_.layers[static_cast<size_t>(lm_head_)];
    const double fewer = lm_head_chunk_batch_ - static_cast<double>(batch_);
    const double forward_slope = std::max(0.0, head.forward_peak.per_sample - head.forward_start.per_sample);
    const double backward_slope = std::max(0.0, head.backward_peak.per_sample - head.backward_start.per_sample);
    const int f = forward_at_[static_cast<size_t>(lm_head_)], bk = backward_at_[static_cast<size_t>(lm_head_)];
    const double chunk_logprobs = slots_[static_cast<size_t>(lm_head_logprobs_slot_)].raw_bytes * lm_head_chunk_batch_ / static_cast<double>(batch_);
    add(diff, forward_slope * fewer, f, f);
    add(diff, backward_slope * fewer + target_.allocated(chunk_logprobs), bk, bk);
  }
  std::vector<double> bytes(points_.size());
  double running = 0;
  for (size_t p = 0; p < points_.size(); ++p) {
    running += diff[p];
    bytes[p] = keep_bytes_[p] + running;
  }
  return bytes;
}

Estimate PlanSpace::evaluate(const Assignment& a) const {
  const Held h = hold(a);
  const std::vector<double> bytes = bytes_at(h);
  Estimate e;
  e.peak_bytes = -1;
  for (size_t p = 0; p < points_.size(); ++p) {
    const TimelinePoint& point = points_[p];
    if (point.phase == Phase::recompute && !h.recomputed[static_cast<size_t>(point.segment)]) continue;
    if (bytes[p] > e.peak_bytes) {
      e.peak_bytes = bytes[p];
      e.peak_at = point;
    }
  }
  e.peak_bytes += unattributed_bytes_;

  // Compute per layer, codecs included, then the swap copies around it.
  const int n = static_cast<int>(model_.layers.size());
  std::vector<double> forward = forward_s_, backward = backward_s_, to_host(static_cast<size_t>(n), 0.0),
                      from_host(static_cast<size_t>(n), 0.0);
  for (const auto& copies : h.copies) {
    for (const Copy& c : copies) {
      forward[static_cast<size_t>(c.created)] += codec_pack_seconds(c.strategy, c.packed_from);
      for (const Use& u : c.uses) backward[static_cast<size_t>(u.charged_to)] += codec_unpack_seconds(c.strategy, u.raw_bytes);
      if (!c.strategy.swap) continue;
      e.host_bytes += c.host_bytes;
      to_host[static_cast<size_t>(c.created)] += c.host_bytes;
      from_host[static_cast<size_t>(c.fetched_by)] += c.host_bytes;
    }
  }
  for (size_t s = 0; s < segments_.size(); ++s) {
    if (h.recomputed[s]) backward[static_cast<size_t>(segments_[s].last_layer)] += recompute_s_[s];
  }
  if (h.lm_head_recomputed) backward[static_cast<size_t>(lm_head_)] += forward_s_[static_cast<size_t>(lm_head_)];

  double clock = 0, link = 0;
  std::vector<double> copied(static_cast<size_t>(n), 0.0);
  for (int j = 0; j < n; ++j) {
    if (j >= 2) clock = std::max(clock, copied[static_cast<size_t>(j - 2)]);
    clock += forward[static_cast<size_t>(j)];
    if (to_host[static_cast<size_t>(j)] > 0) link = std::max(link, clock) + to_host[static_cast<size_t>(j)] / target_.d2h_bytes_per_s;
    copied[static_cast<size_t>(j)] = link;
  }
  clock = std::max(clock, link);
  link = clock;
  double next_started = clock;  // when the backward of the layer after j started
  for (int j = n - 1; j >= 0; --j) {
    if (from_host[static_cast<size_t>(j)] > 0) {
      link = std::max(link, next_started) + from_host[static_cast<size_t>(j)] / target_.h2d_bytes_per_s;
      clock = std::max(clock, link);
    }
    next_started = clock;
    clock += backward[static_cast<size_t>(j)];
  }
  e.seconds = clock + optimizer_s_ + rest_s_;
  e.samples_per_s = e.seconds > 0 ? static_cast<double>(batch_) / e.seconds : 0;
  return e;
}

Assignment PlanSpace::assignment(const Plan& plan) const {
  Assignment a;
  for (const Slot& slot : slots_) {
    const size_t colon = slot.key.rfind(':');
    a.slots.push_back(plan.tensor(slot.key.substr(0, colon), slot.key.substr(colon + 1)));
  }
  for (const Segment& s : segments_) a.segments.push_back(plan.segment(s.path));
  return a;
}

Assignment PlanSpace::assignment(const std::vector<int>& storage_option, const std::vector<int>& segment_option) const {
  Assignment a;
  a.slots.resize(slots_.size());
  a.segments.resize(segments_.size());
  for (size_t g = 0; g < storages_.size(); ++g) {
    const Option& o = storages_[g].options.at(static_cast<size_t>(storage_option.at(g)));
    for (size_t k = 0; k < storages_[g].slots.size(); ++k) a.slots[static_cast<size_t>(storages_[g].slots[k])] = o.per_slot[k];
  }
  for (size_t s = 0; s < segments_.size(); ++s) {
    const int choice = segment_option.at(s);
    if (choice < 0) continue;
    a.segments[s].recompute = true;
    a.segments[s].input = segments_[s].input_options.at(static_cast<size_t>(choice)).strategy;
  }
  return a;
}

Plan PlanSpace::plan(const Assignment& a, const std::string& name) const {
  Plan p;
  p.name = name;
  p.network = model_.network;
  p.batch = static_cast<int>(batch_);
  for (size_t s = 0; s < segments_.size(); ++s) {
    if (a.segments[s].recompute) p.segments[segments_[s].path] = a.segments[s];
  }
  for (size_t i = 0; i < slots_.size(); ++i) {
    const int seg = layer_segment_[static_cast<size_t>(slots_[i].layer)];
    if (seg >= 0 && a.segments[static_cast<size_t>(seg)].recompute) continue;
    if (!a.slots[i].is_keep()) p.tensors[slots_[i].key] = a.slots[i];
  }
  return p;
}

}  // namespace papaya::model
