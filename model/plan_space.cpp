#include "model/plan_space.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>

#include "model/error.h"
#include "model/strategy_table.h"

namespace papaya::model {
namespace {

double scaled_by(double per_sample, bool grows, double batch) { return grows ? per_sample * batch : per_sample; }

int64_t numel_at(const SavedTensorProfile& t, double batch) {
  return static_cast<int64_t>(std::llround(scaled_by(t.numel_per_sample, t.per_sample, batch)));
}

TensorStrategy unswapped(TensorStrategy s) {
  s.swap = false;
  return s;
}

const std::vector<std::string> storage_candidates = storage_candidate_names();
const std::vector<std::string> input_candidates = segment_input_candidate_names();

}  // namespace

const char* to_string(Phase phase) {
  switch (phase) {
    case Phase::forward: return "forward";
    case Phase::recompute: return "recompute";
    case Phase::backward: return "backward";
  }
  return "?";
}

// What does not depend on the batch.
struct PlanSpace::Shared {
  const LayerModel* model = nullptr;
  Target target;
  std::vector<Slot> slots;
  std::vector<const SavedTensorProfile*> slot_tensor;
  std::vector<Storage> storages;
  std::vector<double> storage_bytes_per_sample;  // the whole storage (a tensor no slot saves: its size)
  std::vector<bool> storage_grows;
  std::vector<bool> storage_held_by_caller;  // the batch's data: held all step whatever the plan
  std::vector<int> storage_code_holds_until;  // the last layer whose forward the code holds it through
  // Per layer, the storages it makes and saves beyond its output (max-pool
  // indices, dropout masks), per sample.
  std::vector<double> layer_created_bytes_per_sample;
  std::vector<Segment> segments;
  // Per storage, the strategies its options ask and what each slot takes.
  std::vector<std::vector<std::pair<TensorStrategy, std::vector<TensorStrategy>>>> candidates;
  // Per segment, how its input may be kept: [0] raw.
  std::vector<std::vector<TensorStrategy>> input_candidates;
  std::vector<TimelinePoint> points;
  std::vector<int> forward_at, backward_at, recompute_at;  // point index of F/B/R of each layer (-1: none)
  std::vector<int> layer_segment;                          // segment index of each layer, -1 if none
  std::vector<int> output_storage, output_consumer_slot;   // per GELU/SiLU layer, -1 elsewhere
  // Per layer: what inverting it adds to its backward per byte of input
  // (Target::invert_extra_seconds is linear in the bytes; 0 but for GELU/SiLU).
  std::vector<double> invert_seconds_per_byte;
  // Per layer: its parameter copies as keep's figures hold them, and the index
  // of its first slot (-1: none).
  std::vector<double> parameter_copy_bytes;
  std::vector<int> first_slot;
  int lm_head = -1, lm_head_logprobs_slot = -1;
  double lm_head_rows_per_sample = 1;
  int64_t lm_head_vocab = 1;
};

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

// What one storage holds under a plan: its copies and the point intervals
// where its raw storage is held.
struct PlanSpace::StorageHeld {
  std::vector<Copy> copies;
  std::vector<std::pair<int, int>> raw;
};

// What an assignment keeps, per storage.
struct PlanSpace::Held {
  std::vector<StorageHeld> storages;
  std::vector<bool> recomputed;  // per segment
  std::vector<bool> runs_moms;   // per layer: a slot not kept, outside a recomputed segment
  bool lm_head_recomputed = false;
};

PlanSpace::PlanSpace(const LayerModel& model, const Target& target, int64_t batch) {
  auto s = std::make_shared<Shared>();
  s->model = &model;
  s->target = target;
  for (const auto& layer : model.layers) {
    s->invert_seconds_per_byte.push_back(target.invert_extra_seconds(layer.kind, 1));
    const double copies = static_cast<double>(layer.parameter_copy_bytes);
    s->parameter_copy_bytes.push_back(target.round_keep || copies == 0 ? copies : target.allocated(copies));
  }
  s->first_slot.assign(model.layers.size(), -1);
  const int n = static_cast<int>(model.layers.size());

  std::map<std::string, int> segment_index;
  for (const auto& seg : model.segments) {
    segment_index[seg.path] = static_cast<int>(s->segments.size());
    s->segments.push_back({seg.path, INT_MAX, -1, -1});
  }
  s->layer_segment.assign(static_cast<size_t>(n), -1);
  for (int j = 0; j < n; ++j) {
    const auto& path = model.layers[static_cast<size_t>(j)].segment;
    if (path.empty()) continue;
    Segment& seg = s->segments[static_cast<size_t>(segment_index.at(path))];
    s->layer_segment[static_cast<size_t>(j)] = segment_index.at(path);
    seg.first_layer = std::min(seg.first_layer, j);
    seg.last_layer = std::max(seg.last_layer, j);
  }

  // The timeline: forward, then backward with each segment's recompute before it.
  s->forward_at.assign(static_cast<size_t>(n), -1);
  s->backward_at.assign(static_cast<size_t>(n), -1);
  s->recompute_at.assign(static_cast<size_t>(n), -1);
  for (int j = 0; j < n; ++j) {
    s->forward_at[static_cast<size_t>(j)] = static_cast<int>(s->points.size());
    s->points.push_back({Phase::forward, j, s->layer_segment[static_cast<size_t>(j)]});
  }
  for (int j = n - 1; j >= 0; --j) {
    const int seg = s->layer_segment[static_cast<size_t>(j)];
    if (seg >= 0 && s->segments[static_cast<size_t>(seg)].last_layer == j) {
      for (int r = s->segments[static_cast<size_t>(seg)].first_layer; r <= j; ++r) {
        s->recompute_at[static_cast<size_t>(r)] = static_cast<int>(s->points.size());
        s->points.push_back({Phase::recompute, r, seg});
      }
    }
    s->backward_at[static_cast<size_t>(j)] = static_cast<int>(s->points.size());
    s->points.push_back({Phase::backward, j, seg});
  }

  // Slots and the storages they share.
  std::map<std::string, int> storage_index, slot_index, layer_index;
  for (int j = 0; j < n; ++j) layer_index[model.layers[static_cast<size_t>(j)].path] = j;
  const auto new_storage = [&](const std::string& key, int layer, double bytes_per_sample, bool grows) {
    s->storages.push_back({key, {}, layer, layer});
    s->storage_bytes_per_sample.push_back(bytes_per_sample);
    s->storage_grows.push_back(grows);
    s->storage_held_by_caller.push_back(false);
    s->storage_code_holds_until.push_back(layer);
    return static_cast<int>(s->storages.size()) - 1;
  };
  for (int j = 0; j < n; ++j) {
    const auto& layer = model.layers[static_cast<size_t>(j)];
    for (const auto& t : layer.saved) {
      const std::string key = tensor_key(layer.path, t.slot);
      const std::string storage_key = t.storage.empty() ? key : t.storage;
      auto it = storage_index.find(storage_key);
      if (it == storage_index.end()) it = storage_index.emplace(storage_key, new_storage(storage_key, j, 0, false)).first;
      const int g = it->second;
      Storage& st = s->storages[static_cast<size_t>(g)];
      s->storage_bytes_per_sample[static_cast<size_t>(g)] = std::max(s->storage_bytes_per_sample[static_cast<size_t>(g)], t.storage_bytes_per_sample);
      s->storage_grows[static_cast<size_t>(g)] = s->storage_grows[static_cast<size_t>(g)] || t.per_sample;
      if (t.held_by_caller) s->storage_held_by_caller[static_cast<size_t>(g)] = true;
      int& until = s->storage_code_holds_until[static_cast<size_t>(g)];
      until = std::max({until, j, t.last_forward_use.empty() ? j : layer_index.at(t.last_forward_use)});
      st.last_layer = j;
      const int i = static_cast<int>(s->slots.size());
      slot_index[key] = i;
      if (s->first_slot[static_cast<size_t>(j)] < 0) s->first_slot[static_cast<size_t>(j)] = i;
      st.slots.push_back(i);
      s->slots.push_back({key, j, g, t.kind});
      s->slot_tensor.push_back(&t);
      if (traits(layer.kind).recomputes_logprobs && t.slot == "logprobs") {
        s->lm_head = j;
        s->lm_head_logprobs_slot = i;
        for (size_t d = 0; d + 1 < t.sample_shape.size(); ++d) s->lm_head_rows_per_sample *= static_cast<double>(t.sample_shape[d]);
        if (!t.sample_shape.empty()) s->lm_head_vocab = t.sample_shape.back();
      }
    }
  }
  for (size_t seg = 0; seg < model.segments.size(); ++seg) {
    const auto& input = model.segments[seg].input;
    Segment& view = s->segments[seg];
    if (!input.storage.empty()) {
      view.input_storage = s->slots[static_cast<size_t>(slot_index.at(input.storage))].storage;
    } else {
      const double bytes = std::max(input.storage_bytes_per_sample, input.numel_per_sample * input.element_size);
      view.input_storage = new_storage(view.path + ":input", view.first_layer, bytes, input.per_sample);
    }
    if (model.segments[seg].returns_last_layer_output && view.first_layer < view.last_layer) {
      view.held_gradient_bytes_per_sample = model.layers[static_cast<size_t>(view.last_layer)].output_bytes_per_sample;
    }
  }
  std::vector<bool> is_output(s->storages.size(), false);
  for (const auto& layer : model.layers) {
    for (const auto& key : layer.output_saved_by) is_output[static_cast<size_t>(s->slots[static_cast<size_t>(slot_index.at(key))].storage)] = true;
  }
  s->layer_created_bytes_per_sample.assign(static_cast<size_t>(n), 0.0);
  for (size_t g = 0; g < s->storages.size(); ++g) {
    const Storage& st = s->storages[g];
    if (st.slots.empty() || is_output[g] || !s->storage_grows[g]) continue;
    if (s->slot_tensor[static_cast<size_t>(st.slots.front())]->slot == "input") continue;
    s->layer_created_bytes_per_sample[static_cast<size_t>(st.first_layer)] += s->storage_bytes_per_sample[g];
  }
  s->output_storage.assign(static_cast<size_t>(n), -1);
  s->output_consumer_slot.assign(static_cast<size_t>(n), -1);
  for (int j = 0; j < n; ++j) {
    const auto& layer = model.layers[static_cast<size_t>(j)];
    if (!traits(layer.kind).invertible_input) continue;
    if (!layer.output_saved_by.empty()) {
      const int consumer = slot_index.at(layer.output_saved_by.front());
      s->output_consumer_slot[static_cast<size_t>(j)] = consumer;
      s->output_storage[static_cast<size_t>(j)] = s->slots[static_cast<size_t>(consumer)].storage;
    } else {
      s->output_storage[static_cast<size_t>(j)] = new_storage(layer.path + ":output", j, layer.output_bytes_per_sample, true);
    }
  }

  // What each option of each storage asks of each of its slots.
  const NetworkLayout layout = model.layout();
  std::vector<TensorStrategy> asked;
  for (const auto& name : storage_candidates) asked.push_back(parse_tensor_strategy(name, "candidate"));
  for (size_t g = 0; g < s->storages.size(); ++g) {
    const Storage& st = s->storages[g];
    auto& list = s->candidates.emplace_back();
    list.push_back({TensorStrategy{}, std::vector<TensorStrategy>(st.slots.size())});
    if (s->storage_held_by_caller[g]) continue;  // storing it otherwise frees nothing
    for (const TensorStrategy& strategy : asked) {
      if (strategy.swap && !target.has_host_link()) continue;
      std::vector<TensorStrategy> per_slot;
      for (int i : st.slots) {
        const Slot& slot = s->slots[static_cast<size_t>(i)];
        const LayerDesc& desc = layout.layers[static_cast<size_t>(slot.layer)];
        const SlotDesc& slot_desc = *desc.find_slot(s->slot_tensor[static_cast<size_t>(i)]->slot);
        const TensorStrategy adapted = adapt_to_slot(desc, slot_desc, strategy);
        per_slot.push_back(why_not(desc, slot_desc, adapted) ? TensorStrategy{} : adapted);
      }
      const bool changes = std::any_of(per_slot.begin(), per_slot.end(), [](const auto& x) { return !x.is_keep(); });
      const bool seen = std::any_of(list.begin(), list.end(), [&](const auto& c) { return c.second == per_slot; });
      if (changes && !seen) list.push_back({strategy, per_slot});
    }
  }
  for (size_t seg = 0; seg < s->segments.size(); ++seg) {
    auto& list = s->input_candidates.emplace_back(1, TensorStrategy{});
    for (const auto& name : input_candidates) {
      const TensorStrategy input = parse_segment_strategy(std::string("recompute+") + name, "candidate").input;
      if (input.swap && !target.has_host_link()) continue;
      if (input.form != Form::raw && model.segments[seg].input.kind != SlotKind::activation) continue;
      list.push_back(input);
    }
  }
  *this = PlanSpace(std::move(s), batch);
}

PlanSpace::PlanSpace(std::shared_ptr<const Shared> shared, int64_t batch) : shared_(std::move(shared)), batch_(batch) {
  if (batch < 1) throw InputError("batch " + std::to_string(batch) + ": a batch has at least one sample");
  const Shared& s = *shared_;
  const LayerModel& model = *s.model;
  const double b = static_cast<double>(batch);
  const size_t n = model.layers.size();

  keep_bytes_.resize(s.points.size());
  for (size_t p = 0; p < s.points.size(); ++p) {
    const TimelinePoint& point = s.points[p];
    const LayerFit& layer = model.layers[static_cast<size_t>(point.layer)];
    switch (point.phase) {
      case Phase::forward: keep_bytes_[p] = layer.forward_peak.at(b); break;
      case Phase::backward: keep_bytes_[p] = layer.backward_peak.at(b); break;
      case Phase::recompute: {
        // The segment's backward starts with all its tensors live again; the
        // layer recomputing adds what its forward grows by.
        const int last = s.segments[static_cast<size_t>(point.segment)].last_layer;
        keep_bytes_[p] = model.layers[static_cast<size_t>(last)].backward_start.at(b) + layer.forward_peak.at(b) - layer.forward_start.at(b);
        break;
      }
    }
  }
  storage_bytes_.resize(s.storages.size());
  for (size_t g = 0; g < s.storages.size(); ++g) storage_bytes_[g] = scaled_by(s.storage_bytes_per_sample[g], s.storage_grows[g], b);
  for (size_t i = 0; i < s.slots.size(); ++i) {
    const SavedTensorProfile& t = *s.slot_tensor[i];
    slot_numel_.push_back(numel_at(t, b));
    slot_bytes_.push_back(static_cast<double>(slot_numel_.back()) * t.element_size);
    double& whole = storage_bytes_[static_cast<size_t>(s.slots[i].storage)];
    whole = std::max(whole, slot_bytes_.back());
  }
  lm_head_chunk_batch_ =
      std::min(b, static_cast<double>(lm_head_chunk_rows(s.lm_head_vocab)) / s.lm_head_rows_per_sample);
  // What each layer allocates beyond its start, its output and what else it
  // saves in forward (a layer stores its tensors once the output is there)
  // and beyond its start in backward: room a codec's scratch fits in.
  for (size_t j = 0; j < n; ++j) {
    const LayerFit& layer = model.layers[j];
    const double output = (layer.output_bytes_per_sample + s.layer_created_bytes_per_sample[j]) * b;
    forward_headroom_.push_back(std::max(0.0, layer.forward_peak.at(b) - layer.forward_start.at(b) - output));
    backward_headroom_.push_back(std::max(0.0, layer.backward_peak.at(b) - layer.backward_start.at(b)));
  }
  for (size_t j = 0; j < n; ++j) {
    forward_s_.push_back(s.target.forward_seconds[j].at(b));
    backward_s_.push_back(s.target.backward_seconds[j].at(b));
  }
  for (const auto& curve : s.target.recompute_seconds) recompute_s_.push_back(curve.at(b));
  optimizer_s_ = s.target.optimizer_seconds.at(b);
  rest_s_ = s.target.rest_seconds.at(b);
  unattributed_bytes_ = model.unattributed_peak.at(b);
}

PlanSpace PlanSpace::at_batch(int64_t batch) const { return PlanSpace(shared_, batch); }

const Target& PlanSpace::target() const { return shared_->target; }
const std::vector<PlanSpace::Slot>& PlanSpace::slots() const { return shared_->slots; }
const std::vector<PlanSpace::Storage>& PlanSpace::storages() const { return shared_->storages; }
const std::vector<PlanSpace::Segment>& PlanSpace::segments() const { return shared_->segments; }
const std::vector<TimelinePoint>& PlanSpace::points() const { return shared_->points; }

PlanSpace::Copy& PlanSpace::copy_for(std::vector<Copy>& copies, const TensorStrategy& s, SlotKind kind, int64_t numel,
                                     int element_size, double raw, int64_t head_numel) const {
  auto it = std::find_if(copies.begin(), copies.end(), [&](const Copy& c) { return c.strategy == s; });
  if (it == copies.end()) {
    copies.push_back(Copy{});
    it = copies.end() - 1;
    it->strategy = s;
  }
  it->device_bytes = std::max(
      it->device_bytes, target().allocated(static_cast<double>(device_bytes(kind, numel, element_size, unswapped(s), head_numel))));
  it->host_bytes = std::max(it->host_bytes, static_cast<double>(host_bytes(kind, numel, element_size, s, head_numel)));
  it->packed_from = std::max(it->packed_from, raw);
  return *it;
}

std::vector<PlanSpace::Copy> PlanSpace::copies_of(int storage, const std::vector<TensorStrategy>& per_slot) const {
  const Storage& st = storages()[static_cast<size_t>(storage)];
  std::vector<Copy> copies;
  for (size_t k = 0; k < st.slots.size(); ++k) {
    const TensorStrategy& s = per_slot[k];
    if (s.is_keep() || s.form == Form::recomputed) continue;
    const int i = st.slots[k];
    const Slot& slot = slots()[static_cast<size_t>(i)];
    const int64_t numel = slot_numel_[static_cast<size_t>(i)];
    const double raw = slot_bytes_[static_cast<size_t>(i)];
    const SavedTensorProfile& tensor = *shared_->slot_tensor[static_cast<size_t>(i)];
    // A headwise tensor's heads are its last two dimensions, (heads, tokens, .) per sample.
    const auto& shape = tensor.sample_shape;
    const int64_t head_numel = shape.size() >= 3 ? shape[shape.size() - 1] * shape[shape.size() - 2] : 0;
    Copy& c = copy_for(copies, s, slot.kind, numel, tensor.element_size, raw, head_numel);
    c.created = std::min(c.created, slot.layer);
    c.first_user = std::min(c.first_user, slot.layer);
    c.fetched_by = std::max(c.fetched_by, slot.layer);
    const bool mask = s.form == Form::inverted || slot.kind == SlotKind::mask;
    const double transient = mask ? static_cast<double>(numel) : raw;  // a mask unpacks to bools
    c.uses.push_back({shared_->backward_at[static_cast<size_t>(slot.layer)], slot.layer, raw, transient});
  }
  return copies;
}

double PlanSpace::codec_pack_seconds(const TensorStrategy& s, double raw_bytes) const {
  return is_packed(s) ? target().codec(codec_bits(s)).pack_seconds(raw_bytes) : 0;
}

double PlanSpace::codec_unpack_seconds(const TensorStrategy& s, double raw_bytes) const {
  return is_packed(s) ? target().codec(codec_bits(s)).unpack_seconds(raw_bytes) : 0;
}

// One use of a stored copy in `layer`'s backward: unpacking it, and for an
// inverted activation the derivative from its output beyond keep's backward.
double PlanSpace::use_seconds(const TensorStrategy& s, int layer, double raw_bytes) const {
  const double unpack = codec_unpack_seconds(s, raw_bytes);
  if (!row_of(s.form).derivative_from_output) return unpack;
  return unpack + shared_->invert_seconds_per_byte[static_cast<size_t>(layer)] * raw_bytes;
}

PlanSpace::Option PlanSpace::option(const std::vector<Copy>& copies, const std::vector<TensorStrategy>& per_slot,
                                    double raw_bytes) const {
  Option o;
  o.per_slot = per_slot;
  const auto has = [&](auto test) { return std::any_of(per_slot.begin(), per_slot.end(), test); };
  if (per_slot.empty() || has([](const TensorStrategy& s) { return s.is_keep(); })) o.device_bytes += target().allocated(raw_bytes);
  if (has([](const TensorStrategy& s) { return s.form == Form::recomputed; })) {
    o.recompute_seconds = forward_s_[static_cast<size_t>(shared_->lm_head)];
  }
  for (const Copy& c : copies) {
    if (c.strategy.swap) {
      o.host_bytes += c.host_bytes;
      o.link_seconds += c.host_bytes / target().d2h_bytes_per_s + c.host_bytes / target().h2d_bytes_per_s;
    } else {
      o.device_bytes += c.device_bytes;
    }
    o.codec_seconds += codec_pack_seconds(c.strategy, c.packed_from);
    for (const Use& u : c.uses) o.codec_seconds += use_seconds(c.strategy, u.charged_to, u.raw_bytes);
  }
  return o;
}

std::vector<PlanSpace::Option> PlanSpace::options(int storage) const {
  std::vector<Option> out;
  for (const auto& [strategy, per_slot] : shared_->candidates.at(static_cast<size_t>(storage))) {
    out.push_back(option(copies_of(storage, per_slot), per_slot, storage_bytes_[static_cast<size_t>(storage)]));
    out.back().strategy = strategy;
  }
  return out;
}

PlanSpace::SegmentCost PlanSpace::segment_cost(int segment) const {
  const Segment& view = segments().at(static_cast<size_t>(segment));
  SegmentCost cost;
  cost.recompute_seconds = recompute_s_[static_cast<size_t>(segment)];
  for (size_t g = 0; g < storages().size(); ++g) {
    const Storage& st = storages()[g];
    if (st.slots.empty()) continue;
    const auto inside = [&](int i) { return shared_->layer_segment[static_cast<size_t>(slots()[static_cast<size_t>(i)].layer)] == segment; };
    const double bytes = target().allocated(storage_bytes_[g]);
    if (std::any_of(st.slots.begin(), st.slots.end(), inside)) cost.rematerialized_bytes += bytes;
    if (std::all_of(st.slots.begin(), st.slots.end(), inside) && !shared_->storage_held_by_caller[g]) cost.freed_bytes += bytes;
  }
  cost.rematerialized_bytes += held_gradient_bytes(segment);
  for (int j = view.first_layer; j <= view.last_layer; ++j) {
    cost.freed_bytes += shared_->parameter_copy_bytes[static_cast<size_t>(j)];
    cost.rematerialized_bytes += shared_->parameter_copy_bytes[static_cast<size_t>(j)];
  }
  const auto& input = shared_->model->segments[static_cast<size_t>(segment)].input;
  const int64_t numel = numel_at(input, static_cast<double>(batch_));
  const double raw = static_cast<double>(numel) * input.element_size;
  for (const TensorStrategy& s : shared_->input_candidates[static_cast<size_t>(segment)]) {
    if (s.is_keep()) {
      cost.input_options.push_back(option({}, {s}, storage_bytes_[static_cast<size_t>(view.input_storage)]));
      continue;
    }
    std::vector<Copy> copies;
    copy_for(copies, s, input.kind, numel, input.element_size, raw).uses.push_back({0, 0, raw, raw});
    cost.input_options.push_back(option(copies, {s}, raw));
    cost.input_options.back().strategy = s;
  }
  return cost;
}

bool PlanSpace::active(int layer, const std::vector<bool>& recomputed) const {
  const int s = shared_->layer_segment[static_cast<size_t>(layer)];
  return s < 0 || recomputed.empty() || !recomputed[static_cast<size_t>(s)];
}

// The raw storage held from a user's forward (no earlier than the storage's
// first saver, before which it is the forward's own) to its backward.
void PlanSpace::hold_raw_user(int g, int layer, StorageHeld& held) const {
  const Shared& sh = *shared_;
  const Storage& st = sh.storages[static_cast<size_t>(g)];
  const int from = st.slots.empty() ? layer + 1 : sh.forward_at[static_cast<size_t>(std::max(layer, st.first_layer))];
  held.raw.push_back({from, sh.backward_at[static_cast<size_t>(layer)]});
}

void PlanSpace::hold_slots(int g, const std::vector<TensorStrategy>& per_slot, const std::vector<bool>& recomputed,
                           StorageHeld& held, bool& lm_head_recomputed) const {
  const Shared& sh = *shared_;
  const Storage& st = sh.storages[static_cast<size_t>(g)];
  if (st.slots.empty()) return;
  // While the network's code holds it in forward, the storage is there
  // whatever the plan; the batch's data, all step.
  if (sh.storage_held_by_caller[static_cast<size_t>(g)]) {
    held.raw.push_back({0, static_cast<int>(sh.points.size()) - 1});
  } else {
    held.raw.push_back({sh.forward_at[static_cast<size_t>(st.first_layer)],
                        sh.forward_at[static_cast<size_t>(sh.storage_code_holds_until[static_cast<size_t>(g)])]});
  }
  std::vector<TensorStrategy> stored(st.slots.size());  // what copies_of makes copies of
  for (size_t k = 0; k < st.slots.size(); ++k) {
    const Slot& slot = sh.slots[static_cast<size_t>(st.slots[k])];
    const TensorStrategy& s = per_slot[k];
    if (!active(slot.layer, recomputed)) {  // rematerialized by its segment's recompute
      held.raw.push_back({sh.recompute_at[static_cast<size_t>(slot.layer)], sh.backward_at[static_cast<size_t>(slot.layer)]});
      continue;
    }
    if (s.swap && !target().has_host_link()) {
      throw InputError(slot.key + ": " + s.name() + " needs a host link, which " + target().name +
                       " lacks (predict for a GPU with --hardware)");
    }
    if (s.form == Form::recomputed) lm_head_recomputed = true;
    if (s.is_keep()) hold_raw_user(g, slot.layer, held);
    stored[k] = s;
  }
  held.copies = copies_of(g, stored);
}

// An inverted GELU/SiLU uses its output as the slot saving it keeps it:
// `consumer` is that slot's strategy (nullptr: no active slot saves it), and
// `output` what the output's storage holds.
void PlanSpace::hold_inverted_output(int slot, const TensorStrategy* consumer, StorageHeld& output) const {
  const Shared& sh = *shared_;
  const int layer = sh.slots[static_cast<size_t>(slot)].layer;
  auto& copies = output.copies;
  auto it = copies.end();
  if (consumer) it = std::find_if(copies.begin(), copies.end(), [&](const Copy& c) { return c.strategy == *consumer; });
  if (it == copies.end()) {  // the output is kept raw, by its consumer or by the layer itself
    hold_raw_user(sh.output_storage[static_cast<size_t>(layer)], layer, output);
    return;
  }
  const double raw = slot_bytes_[static_cast<size_t>(sh.output_consumer_slot[static_cast<size_t>(layer)])];
  it->first_user = std::min(it->first_user, layer);
  it->uses.push_back({sh.backward_at[static_cast<size_t>(layer)], layer, raw, raw});
}

// A recomputed segment keeps its input.
void PlanSpace::hold_segment_input(int segment, const TensorStrategy& input_strategy, StorageHeld& held) const {
  const Shared& sh = *shared_;
  const Segment& view = sh.segments[static_cast<size_t>(segment)];
  if (input_strategy.is_keep()) {
    hold_raw_user(view.input_storage, view.first_layer, held);
    return;
  }
  if (input_strategy.swap && !target().has_host_link()) {
    throw InputError(view.path + ": recompute+" + input_strategy.name() + " needs a host link, which " + target().name + " lacks");
  }
  const auto& input = sh.model->segments[static_cast<size_t>(segment)].input;
  const int64_t numel = numel_at(input, static_cast<double>(batch_));
  const double raw = static_cast<double>(numel) * input.element_size;
  Copy& c = copy_for(held.copies, input_strategy, input.kind, numel, input.element_size, raw);
  c.created = std::min(c.created, view.first_layer);
  c.first_user = std::min(c.first_user, view.first_layer);
  c.fetched_by = std::max(c.fetched_by, view.last_layer);
  c.uses.push_back({sh.recompute_at[static_cast<size_t>(view.first_layer)], view.last_layer, raw, raw});
}

PlanSpace::Held PlanSpace::hold(const Assignment& a) const {
  const Shared& sh = *shared_;
  if (a.slots.size() != sh.slots.size() || a.segments.size() != sh.segments.size()) {
    throw std::invalid_argument("assignment does not match the plan space");
  }
  Held h;
  h.storages.resize(sh.storages.size());
  for (const auto& s : a.segments) h.recomputed.push_back(s.recompute);
  h.runs_moms.assign(sh.model->layers.size(), false);
  for (size_t i = 0; i < sh.slots.size(); ++i) {
    const int layer = sh.slots[i].layer;
    if (!a.slots[i].is_keep() && active(layer, h.recomputed)) h.runs_moms[static_cast<size_t>(layer)] = true;
  }
  std::vector<TensorStrategy> per_slot;
  for (size_t g = 0; g < sh.storages.size(); ++g) {
    per_slot.clear();
    for (int i : sh.storages[g].slots) per_slot.push_back(a.slots[static_cast<size_t>(i)]);
    hold_slots(static_cast<int>(g), per_slot, h.recomputed, h.storages[g], h.lm_head_recomputed);
  }
  for (size_t i = 0; i < sh.slots.size(); ++i) {
    const Slot& slot = sh.slots[i];
    if (a.slots[i].form != Form::inverted || !active(slot.layer, h.recomputed)) continue;
    const int out = sh.output_storage[static_cast<size_t>(slot.layer)];
    const int consumer = sh.output_consumer_slot[static_cast<size_t>(slot.layer)];
    const bool consumer_active = consumer >= 0 && active(sh.slots[static_cast<size_t>(consumer)].layer, h.recomputed);
    hold_inverted_output(static_cast<int>(i), consumer_active ? &a.slots[static_cast<size_t>(consumer)] : nullptr,
                         h.storages[static_cast<size_t>(out)]);
  }
  for (size_t s = 0; s < sh.segments.size(); ++s) {
    if (!h.recomputed[s]) continue;
    hold_segment_input(static_cast<int>(s), a.segments[s].input, h.storages[static_cast<size_t>(sh.segments[s].input_storage)]);
  }
  return h;
}

void PlanSpace::add_storage(int g, const StorageHeld& held, double sign, std::vector<Change>& out) const {
  const Shared& sh = *shared_;
  const int n = static_cast<int>(sh.model->layers.size());
  const int first_backward = n;  // the first point after forward
  const auto add = [&](double bytes, int from, int to) {
    if (from <= to && bytes != 0) out.push_back({from, to, sign * bytes});
  };
  const Storage& st = sh.storages[static_cast<size_t>(g)];
  std::vector<std::pair<int, int>> intervals = held.raw;
  if (!st.slots.empty()) {
    // Keep's figures already hold the storage: allocator-rounded on a GPU,
    // exact where they come from a CPU.
    const double whole = storage_bytes_[static_cast<size_t>(g)];
    const double kept = target().round_keep ? whole : target().allocated(whole);
    add(-kept, sh.forward_at[static_cast<size_t>(st.first_layer)], sh.backward_at[static_cast<size_t>(st.first_layer)]);
  }
  for (const Copy& c : held.copies) {
    if (c.strategy.swap) {
      const int forward_from = sh.forward_at[static_cast<size_t>(c.created)];
      const int forward_to = sh.forward_at[static_cast<size_t>(std::min(c.created + 1, n - 1))];
      if (c.strategy.form == Form::raw) {
        intervals.push_back({forward_from, forward_to});  // the raw storage itself is what is copied out
      } else {
        add(c.device_bytes, forward_from, forward_to);
      }
      const int back_from = c.fetched_by + 1 < n ? sh.backward_at[static_cast<size_t>(c.fetched_by + 1)] : first_backward;
      add(c.device_bytes, back_from, sh.backward_at[static_cast<size_t>(c.first_user)]);
    } else {
      add(c.device_bytes, sh.forward_at[static_cast<size_t>(c.created)], sh.backward_at[static_cast<size_t>(c.first_user)]);
    }
    if (!is_packed(c.strategy)) continue;
    // The codec's scratch counts where it outgrows what the layer itself
    // needs beyond its start (and its output, in forward) at that point.
    const CodecMeasurement& codec = target().codec(codec_bits(c.strategy));
    const int f = sh.forward_at[static_cast<size_t>(c.created)];
    add(std::max(0.0, codec.pack_scratch(c.packed_from) - forward_headroom_[static_cast<size_t>(c.created)]), f, f);
    for (const Use& u : c.uses) {
      const double scratch = std::max(0.0, codec.unpack_scratch(u.raw_bytes) - backward_headroom_[static_cast<size_t>(u.charged_to)]);
      add(target().allocated(u.transient_bytes) + scratch, u.point, u.point);
    }
  }
  std::sort(intervals.begin(), intervals.end());
  const double raw = target().allocated(storage_bytes_[static_cast<size_t>(g)]);
  for (size_t k = 0; k < intervals.size();) {
    const int from = intervals[k].first;
    int to = intervals[k].second;
    for (++k; k < intervals.size() && intervals[k].first <= to + 1; ++k) to = std::max(to, intervals[k].second);
    add(raw, from, to);
  }
}

double PlanSpace::held_gradient_bytes(int segment) const {
  const double per_sample = segments()[static_cast<size_t>(segment)].held_gradient_bytes_per_sample;
  return per_sample > 0 ? target().allocated(per_sample * static_cast<double>(batch_)) : 0;
}

// A recomputed segment's backward holds its output's gradient after the
// last layer's backward, where keep has let it go.
void PlanSpace::add_held_gradient(int segment, std::vector<Change>& out) const {
  const Shared& sh = *shared_;
  const Segment& view = sh.segments[static_cast<size_t>(segment)];
  const double bytes = held_gradient_bytes(segment);
  if (bytes > 0) {
    out.push_back({sh.backward_at[static_cast<size_t>(view.last_layer)] + 1, sh.backward_at[static_cast<size_t>(view.first_layer)], bytes});
  }
}

// A layer's parameter copies, held by keep from its F to its B point: not in
// between where it runs its MOM Function, nor before its R point where its
// segment is recomputed.
void PlanSpace::add_parameter_copies(const std::vector<bool>& runs_moms, const std::vector<bool>& recomputed,
                                     std::vector<Change>& out) const {
  const Shared& sh = *shared_;
  for (size_t j = 0; j < sh.parameter_copy_bytes.size(); ++j) {
    if (sh.parameter_copy_bytes[j] == 0) continue;
    const int seg = sh.layer_segment[j];
    int until = -1;
    if (seg >= 0 && !recomputed.empty() && recomputed[static_cast<size_t>(seg)]) {
      until = sh.recompute_at[j] - 1;
    } else if (runs_moms[j]) {
      until = sh.backward_at[j] - 1;
    }
    const int from = sh.forward_at[j] + 1;
    if (from <= until) out.push_back({from, until, -sh.parameter_copy_bytes[j]});
  }
}

// The head's batch-proportional transients (logits, log-probabilities and
// their gradients) shrink to one chunk; backward recomputes the chunk's
// log-probabilities.
void PlanSpace::add_lm_head_chunks(std::vector<Change>& out) const {
  const Shared& sh = *shared_;
  const LayerFit& head = sh.model->layers[static_cast<size_t>(sh.lm_head)];
  const double fewer = lm_head_chunk_batch_ - static_cast<double>(batch_);
  const double forward_slope = std::max(0.0, head.forward_peak.per_sample - head.forward_start.per_sample);
  const double backward_slope = std::max(0.0, head.backward_peak.per_sample - head.backward_start.per_sample);
  const int f = sh.forward_at[static_cast<size_t>(sh.lm_head)], bk = sh.backward_at[static_cast<size_t>(sh.lm_head)];
  const double chunk_logprobs = slot_bytes_[static_cast<size_t>(sh.lm_head_logprobs_slot)] * lm_head_chunk_batch_ / static_cast<double>(batch_);
  out.push_back({f, f, forward_slope * fewer});
  out.push_back({bk, bk, backward_slope * fewer + target().allocated(chunk_logprobs)});
}

std::vector<double> PlanSpace::timeline(const Assignment& a) const { return bytes_at(hold(a)); }

std::vector<double> PlanSpace::bytes_at(const Held& h) const {
  const Shared& sh = *shared_;
  std::vector<Change> changes;
  for (size_t g = 0; g < sh.storages.size(); ++g) add_storage(static_cast<int>(g), h.storages[g], 1, changes);
  for (size_t s = 0; s < sh.segments.size(); ++s) {
    if (h.recomputed[s]) add_held_gradient(static_cast<int>(s), changes);
  }
  add_parameter_copies(h.runs_moms, h.recomputed, changes);
  if (h.lm_head_recomputed) add_lm_head_chunks(changes);
  std::vector<double> diff(sh.points.size() + 1, 0.0);
  for (const Change& c : changes) {
    diff[static_cast<size_t>(c.from)] += c.bytes;
    diff[static_cast<size_t>(c.to) + 1] -= c.bytes;
  }
  std::vector<double> bytes(sh.points.size());
  double running = 0;
  for (size_t p = 0; p < sh.points.size(); ++p) {
    running += diff[p];
    bytes[p] = keep_bytes_[p] + running;
  }
  return bytes;
}

std::vector<PlanSpace::Change> PlanSpace::changes(const std::vector<std::pair<int, int>>& decisions) const {
  const Shared& sh = *shared_;
  const auto decided = [&](int g) -> const std::vector<TensorStrategy>* {
    for (const auto& [storage, option] : decisions) {
      if (storage == g) return &sh.candidates.at(static_cast<size_t>(g)).at(static_cast<size_t>(option)).second;
    }
    return nullptr;
  };
  // What each storage concerned holds under the decisions (keep where none is made).
  std::map<int, StorageHeld> held;
  bool lm_head_recomputed = false, unused = false;
  const auto held_by = [&](int g) -> StorageHeld& {
    auto it = held.find(g);
    if (it != held.end()) return it->second;
    StorageHeld& h = held[g];
    const std::vector<TensorStrategy>* per_slot = decided(g);
    hold_slots(g, per_slot ? *per_slot : std::vector<TensorStrategy>(sh.storages[static_cast<size_t>(g)].slots.size()), {}, h,
               lm_head_recomputed);
    return h;
  };
  for (const auto& decision : decisions) held_by(decision.first);
  // An inverted slot uses its output as the slot saving it keeps it.
  const TensorStrategy keeps;
  for (const auto& [g, option] : decisions) {
    const Storage& st = sh.storages.at(static_cast<size_t>(g));
    const std::vector<TensorStrategy>& per_slot = *decided(g);
    for (size_t k = 0; k < st.slots.size(); ++k) {
      if (per_slot[k].form != Form::inverted) continue;
      const int layer = sh.slots[static_cast<size_t>(st.slots[k])].layer;
      const int consumer = sh.output_consumer_slot[static_cast<size_t>(layer)];
      const TensorStrategy* consumer_strategy = nullptr;
      if (consumer >= 0) {
        const int cs = sh.slots[static_cast<size_t>(consumer)].storage;
        const std::vector<TensorStrategy>* consumer_slots = decided(cs);
        const auto& slots_of = sh.storages[static_cast<size_t>(cs)].slots;
        const size_t at = static_cast<size_t>(std::find(slots_of.begin(), slots_of.end(), consumer) - slots_of.begin());
        consumer_strategy = consumer_slots ? &(*consumer_slots)[at] : &keeps;
      }
      hold_inverted_output(st.slots[k], consumer_strategy, held_by(sh.output_storage[static_cast<size_t>(layer)]));
    }
  }
  std::vector<Change> out;
  for (const auto& [g, h] : held) {
    StorageHeld kept;
    hold_slots(g, std::vector<TensorStrategy>(sh.storages[static_cast<size_t>(g)].slots.size()), {}, kept, unused);
    add_storage(g, h, 1, out);
    add_storage(g, kept, -1, out);
  }
  std::vector<bool> runs_moms(sh.model->layers.size(), false);
  for (const auto& [g, option] : decisions) {
    const Storage& st = sh.storages.at(static_cast<size_t>(g));
    const std::vector<TensorStrategy>& per_slot = *decided(g);
    for (size_t k = 0; k < st.slots.size(); ++k) {
      const int layer = sh.slots[static_cast<size_t>(st.slots[k])].layer;
      if (!per_slot[k].is_keep() && st.slots[k] == sh.first_slot[static_cast<size_t>(layer)]) runs_moms[static_cast<size_t>(layer)] = true;
    }
  }
  add_parameter_copies(runs_moms, {}, out);
  if (lm_head_recomputed) add_lm_head_chunks(out);
  return out;
}

std::vector<PlanSpace::Change> PlanSpace::segment_changes(int segment, int input_option) const {
  const Shared& sh = *shared_;
  const Segment& view = segments().at(static_cast<size_t>(segment));
  const TensorStrategy& input = sh.input_candidates.at(static_cast<size_t>(segment)).at(static_cast<size_t>(input_option));
  std::vector<bool> recomputed(sh.segments.size(), false);
  recomputed[static_cast<size_t>(segment)] = true;
  std::vector<Change> out;
  for (size_t g = 0; g < sh.storages.size(); ++g) {
    const Storage& st = sh.storages[g];
    const bool inside = std::any_of(st.slots.begin(), st.slots.end(), [&](int i) {
      return sh.layer_segment[static_cast<size_t>(sh.slots[static_cast<size_t>(i)].layer)] == segment;
    });
    if (!inside && static_cast<int>(g) != view.input_storage) continue;
    const std::vector<TensorStrategy> keep(st.slots.size());
    StorageHeld with, without;
    bool unused = false;
    hold_slots(static_cast<int>(g), keep, recomputed, with, unused);
    hold_slots(static_cast<int>(g), keep, {}, without, unused);
    if (static_cast<int>(g) == view.input_storage) hold_segment_input(segment, input, with);
    add_storage(static_cast<int>(g), with, 1, out);
    add_storage(static_cast<int>(g), without, -1, out);
  }
  add_held_gradient(segment, out);
  add_parameter_copies(std::vector<bool>(sh.model->layers.size(), false), recomputed, out);
  return out;
}

Estimate PlanSpace::evaluate(const Assignment& a) const {
  const Shared& sh = *shared_;
  const Held h = hold(a);
  const std::vector<double> bytes = bytes_at(h);
  Estimate e;
  e.peak_bytes = -1;
  for (size_t p = 0; p < sh.points.size(); ++p) {
    const TimelinePoint& point = sh.points[p];
    if (point.phase == Phase::recompute && !h.recomputed[static_cast<size_t>(point.segment)]) continue;
    if (bytes[p] > e.peak_bytes) {
      e.peak_bytes = bytes[p];
      e.peak_at = point;
    }
  }
  e.peak_bytes += unattributed_bytes_;

  // Compute per layer, codecs included, then the swap copies around it.
  const size_t n = sh.model->layers.size();
  std::vector<double> forward = forward_s_, backward = backward_s_, to_host(n, 0.0), from_host(n, 0.0);
  for (const StorageHeld& held : h.storages) {
    for (const Copy& c : held.copies) {
      forward[static_cast<size_t>(c.created)] += codec_pack_seconds(c.strategy, c.packed_from);
      for (const Use& u : c.uses) backward[static_cast<size_t>(u.charged_to)] += use_seconds(c.strategy, u.charged_to, u.raw_bytes);
      if (!c.strategy.swap) continue;
      e.host_bytes += c.host_bytes;
      to_host[static_cast<size_t>(c.created)] += c.host_bytes;
      from_host[static_cast<size_t>(c.fetched_by)] += c.host_bytes;
    }
  }
  for (size_t s = 0; s < sh.segments.size(); ++s) {
    if (h.recomputed[s]) backward[static_cast<size_t>(sh.segments[s].last_layer)] += recompute_s_[s];
  }
  if (h.lm_head_recomputed) backward[static_cast<size_t>(sh.lm_head)] += forward_s_[static_cast<size_t>(sh.lm_head)];

  double clock = 0, link = 0;
  std::vector<double> copied(n, 0.0);
  for (size_t j = 0; j < n; ++j) {
    if (j >= 2) clock = std::max(clock, copied[j - 2]);
    clock += forward[j];
    if (to_host[j] > 0) link = std::max(link, clock) + to_host[j] / target().d2h_bytes_per_s;
    copied[j] = link;
  }
  clock = std::max(clock, link);
  link = clock;
  double next_started = clock;  // when the backward of the layer after j started
  for (size_t j = n; j-- > 0;) {
    if (from_host[j] > 0) {
      link = std::max(link, next_started) + from_host[j] / target().h2d_bytes_per_s;
      clock = std::max(clock, link);
    }
    next_started = clock;
    clock += backward[j];
  }
  e.seconds = clock + optimizer_s_ + rest_s_;
  e.samples_per_s = e.seconds > 0 ? static_cast<double>(batch_) / e.seconds : 0;
  return e;
}

Assignment PlanSpace::assignment(const Plan& plan) const {
  Assignment a;
  for (size_t i = 0; i < slots().size(); ++i) {
    const auto& layer = shared_->model->layers[static_cast<size_t>(slots()[i].layer)];
    a.slots.push_back(plan.tensor(layer.path, shared_->slot_tensor[i]->slot));
  }
  for (const Segment& s : segments()) a.segments.push_back(plan.segment(s.path));
  return a;
}

Assignment PlanSpace::assignment(const std::vector<int>& storage_option, const std::vector<int>& segment_option) const {
  Assignment a;
  a.slots.resize(slots().size());
  a.segments.resize(segments().size());
  for (size_t g = 0; g < storages().size(); ++g) {
    const auto& per_slot = shared_->candidates[g].at(static_cast<size_t>(storage_option.at(g))).second;
    for (size_t k = 0; k < storages()[g].slots.size(); ++k) a.slots[static_cast<size_t>(storages()[g].slots[k])] = per_slot[k];
  }
  for (size_t s = 0; s < segments().size(); ++s) {
    const int choice = segment_option.at(s);
    if (choice < 0) continue;
    a.segments[s].recompute = true;
    a.segments[s].input = shared_->input_candidates[s].at(static_cast<size_t>(choice));
  }
  return a;
}

Plan PlanSpace::plan(const Assignment& a, const std::string& name) const {
  Plan p;
  p.name = name;
  p.network = shared_->model->network;
  p.batch = static_cast<int>(batch_);
  for (size_t s = 0; s < segments().size(); ++s) {
    if (a.segments[s].recompute) p.segments[segments()[s].path] = a.segments[s];
  }
  for (size_t i = 0; i < slots().size(); ++i) {
    const int seg = shared_->layer_segment[static_cast<size_t>(slots()[i].layer)];
    if (seg >= 0 && a.segments[static_cast<size_t>(seg)].recompute) continue;
    if (!a.slots[i].is_keep()) p.tensors[slots()[i].key] = a.slots[i];
  }
  return p;
}

}  // namespace papaya::model
