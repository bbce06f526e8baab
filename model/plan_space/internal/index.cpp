#include "model/plan_space/internal/index.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <unordered_map>

#include "model/error.h"
#include "model/network_layout.h"
#include "model/parallel/expert_groups.h"
#include "model/plan.h"
#include "model/strategy_table.h"

namespace papaya::model::plan_space {
namespace {

// What a planner searches: the strategies asked of each storage (beside
// keep), and the forms a recomputed segment may keep its input in (beside
// raw), from the strategy table.
struct Searched {
  std::vector<TensorStrategy> storage, segment_input;
};
Searched searched_strategies() {
  Searched s;
  for (const auto& name : storage_candidate_names()) s.storage.push_back(parse_tensor_strategy(name, "candidate"));
  for (const auto& name : segment_input_candidate_names()) {
    s.segment_input.push_back(parse_segment_strategy("recompute+" + name, "candidate").input);
  }
  return s;
}

double scaled_by(double per_sample, bool grows, double batch) { return grows ? per_sample * batch : per_sample; }

int64_t numel_at(const SavedTensorProfile& t, double batch) {
  return static_cast<int64_t>(std::llround(scaled_by(t.numel_per_sample, t.per_sample, batch)));
}

// Builds an index step by step, by the int indices PlanSpace's types use.
struct Builder {
  Index& ix;
  const LayerModel& model;

  const LayerFit& fit(int j) const { return ix.fit(j); }
  LayerEntry& layer(int j) { return ix.layers[static_cast<size_t>(j)]; }
  Segment& segment(int s) { return ix.segments[static_cast<size_t>(s)]; }
  Storage& storage(int g) { return ix.storages[static_cast<size_t>(g)]; }
  StorageEntry& facts(int g) { return ix.storage_entries[static_cast<size_t>(g)]; }

  int add_storage(const std::string& key, int first_layer, double bytes_per_sample, bool grows) {
    ix.storages.push_back({key, {}, first_layer, first_layer});
    StorageEntry entry;
    entry.bytes_per_sample = bytes_per_sample;
    entry.grows = grows;
    entry.code_holds_until = first_layer;
    ix.storage_entries.push_back(entry);
    return static_cast<int>(ix.storages.size()) - 1;
  }

  // A gap point where the glue before a layer ever holds more than the layer
  // starts with (most layers: the level the layer before ended at).
  static bool has_gap(const LinearCurve& gap, const LinearCurve& start) {
    return gap.per_sample > start.per_sample || gap.fixed > start.fixed;
  }

  // Each segment's layers, and the timeline of points through them.
  void segments_and_points() {
    std::unordered_map<std::string, int> segment_index;
    for (const auto& seg : model.segments) {
      segment_index[seg.path] = static_cast<int>(ix.segments.size());
      ix.segments.push_back({seg.path, INT_MAX, -1, -1});
      ix.segment_entries.push_back({&seg.input, {}});
    }
    const int n = ix.layer_count();
    for (int j = 0; j < n; ++j) {
      if (fit(j).segment.empty()) continue;
      const int s = segment_index.at(fit(j).segment);
      layer(j).segment = s;
      segment(s).first_layer = std::min(segment(s).first_layer, j);
      segment(s).last_layer = std::max(segment(s).last_layer, j);
    }
    const auto add_point = [&](Phase phase, int j, int& at) {
      at = static_cast<int>(ix.points.size());
      ix.points.push_back({phase, j, layer(j).segment});
    };
    int gap = -1;
    for (int j = 0; j < n; ++j) {
      if (has_gap(fit(j).forward_gap_peak, fit(j).forward_start)) add_point(Phase::forward_gap, j, gap);
      add_point(Phase::forward, j, layer(j).forward_at);
    }
    for (int j = n - 1; j >= 0; --j) {
      const int seg = layer(j).segment;
      if (has_gap(fit(j).backward_gap_peak, fit(j).backward_start)) add_point(Phase::backward_gap, j, gap);
      if (seg >= 0 && segment(seg).last_layer == j) {
        for (int r = segment(seg).first_layer; r <= j; ++r) add_point(Phase::recompute, r, layer(r).recompute_at);
      }
      add_point(Phase::backward, j, layer(j).backward_at);
    }
  }

  // The slots, the storages they share, and the storages a plan may hold
  // that no slot saves (a segment's input, a GELU/SiLU output).
  void slots_and_storages() {
    const int n = ix.layer_count();
    // Hashed: a stage's paths share long prefixes, which a tree compares at every step.
    std::unordered_map<std::string, int> storage_index, slot_index, layer_index;
    for (int j = 0; j < n; ++j) layer_index[fit(j).path] = j;
    for (int j = 0; j < n; ++j) {
      for (const auto& t : fit(j).saved) {
        const std::string key = tensor_key(fit(j).path, t.slot);
        const std::string storage_key = t.storage.empty() ? key : t.storage;
        auto it = storage_index.find(storage_key);
        if (it == storage_index.end()) {
          it = storage_index.emplace(storage_key, add_storage(storage_key, j, 0, false)).first;
        }
        const int g = it->second;
        StorageEntry& f = facts(g);
        f.bytes_per_sample = std::max(f.bytes_per_sample, t.storage_bytes_per_sample);
        f.grows = f.grows || t.per_sample;
        if (t.held_by_caller) f.held_by_caller = true;
        const int last_use = t.last_forward_use.empty() ? j : layer_index.at(t.last_forward_use);
        f.code_holds_until = std::max({f.code_holds_until, j, last_use});
        storage(g).last_layer = j;
        const int i = static_cast<int>(ix.slots.size());
        slot_index[key] = i;
        if (layer(j).first_slot < 0) layer(j).first_slot = i;
        ++layer(j).slot_count;
        const auto view = slot_index.find(t.view);
        ix.slot_entries.push_back({&t, storage(g).slots.size(), -1,
                                   t.view.empty()             ? -1
                                   : view == slot_index.end() ? i
                                                              : view->second});
        storage(g).slots.push_back(i);
        ix.slots.push_back({key, j, g, t.kind});
        if (traits(fit(j).kind).recomputes_logprobs) {
          if (layer(j).lm_head < 0) {
            layer(j).lm_head = static_cast<int>(ix.lm_heads.size());
            ix.lm_heads.push_back({});
          }
          LmHead& head = ix.lm_heads.back();
          if (t.slot == "input") head.input_slot = i;
          if (t.slot == "logprobs") {
            head.layer = j;
            head.logprobs_slot = i;
            for (size_t d = 0; d + 1 < t.sample_shape.size(); ++d) head.rows_per_sample *= static_cast<double>(t.sample_shape[d]);
            if (!t.sample_shape.empty()) head.vocab = t.sample_shape.back();
          }
        }
      }
    }
    const auto storage_of = [&](const std::string& slot_key) { return ix.slot(slot_index.at(slot_key)).storage; };
    for (size_t s = 0; s < model.segments.size(); ++s) {
      const SavedTensorProfile& input = model.segments[s].input;
      Segment& seg = ix.segments[s];
      if (!input.storage.empty()) {
        seg.input_storage = storage_of(input.storage);
      } else {
        const double bytes = std::max(input.storage_bytes_per_sample, input.numel_per_sample * input.element_size);
        seg.input_storage = add_storage(seg.path + ":input", seg.first_layer, bytes, input.per_sample);
      }
      if (model.segments[s].returns_last_layer_output && seg.first_layer < seg.last_layer) {
        seg.held_gradient_bytes_per_sample = fit(seg.last_layer).output_bytes_per_sample;
      }
    }
    std::vector<bool> is_output(ix.storages.size(), false);
    for (const auto& l : model.layers) {
      for (const auto& key : l.output_saved_by) is_output[static_cast<size_t>(storage_of(key))] = true;
    }
    for (size_t g = 0; g < ix.storages.size(); ++g) {
      const Storage& st = ix.storages[g];
      const StorageEntry& f = ix.storage_entries[g];
      if (st.slots.empty() || is_output[g] || !f.grows) continue;
      if (ix.slot_entry(st.slots.front()).tensor->slot == "input") continue;
      layer(st.first_layer).created_bytes_per_sample += f.bytes_per_sample;
    }
    for (int j = 0; j < n; ++j) {
      if (!traits(fit(j).kind).invertible_input) continue;
      if (!fit(j).output_saved_by.empty()) {
        layer(j).output_consumer_slot = slot_index.at(fit(j).output_saved_by.front());
        layer(j).output_storage = ix.slot(layer(j).output_consumer_slot).storage;
      } else {
        layer(j).output_storage = add_storage(fit(j).path + ":output", j, fit(j).output_bytes_per_sample, true);
      }
    }
  }

  // The attention cores, and the storages each makes again when recomputed:
  // those its softmax, dropout and context save but q, k and v.
  void attention_cores() {
    for (int j = 0; j < ix.layer_count(); ++j) {
      const auto layers = attention_core_at(model.layers, j);
      if (!layers || layer(j).slot_count != 1) continue;  // no backward through a frozen softmax
      const AttentionCore core{*layers, layer(j).first_slot};
      const int c = static_cast<int>(ix.cores.size());
      ix.cores.push_back(core);
      for (int l : {core.softmax, core.drop, core.context}) {
        for (int i = l < 0 ? 0 : layer(l).first_slot; l >= 0 && i < layer(l).first_slot + layer(l).slot_count; ++i) {
          if (l == core.context && ix.slot_entry(i).tensor->slot == "v") continue;
          facts(ix.slot(i).storage).core = c;
        }
      }
    }
  }

  // Where backward reads each slot, and when keep frees each storage.
  void backward_uses() {
    for (size_t i = 0; i < ix.slots.size(); ++i) {
      const int j = ix.slots[i].layer, b = layer(j).backward_at;
      const bool after = ix.slot_entries[i].tensor->saved_after_forward && b > 0 &&
                         ix.points[static_cast<size_t>(b - 1)].phase == Phase::backward_gap &&
                         ix.points[static_cast<size_t>(b - 1)].layer == j;
      ix.slot_entries[i].used_at = after ? b - 1 : b;
      int& released = facts(ix.slots[i].storage).released_at;
      released = std::max(released, ix.slot_entries[i].used_at);
    }
  }

  // What each option of each storage asks of each of its slots, and how each
  // segment may keep its input.
  void candidates() {
    const NetworkLayout layout = model.layout();
    const Searched searched = searched_strategies();
    for (size_t g = 0; g < ix.storages.size(); ++g) {
      const Storage& st = ix.storages[g];
      auto& list = ix.storage_entries[g].candidates;
      list.push_back({TensorStrategy{}, std::vector<TensorStrategy>(st.slots.size())});
      if (ix.storage_entries[g].held_by_caller) continue;  // storing it otherwise frees nothing
      for (const TensorStrategy& strategy : searched.storage) {
        if (strategy.swap && !ix.target.has_host_link()) continue;
        std::vector<TensorStrategy> per_slot;
        for (int i : st.slots) {
          const LayoutLayer& desc = layout.layers[static_cast<size_t>(ix.slot(i).layer)];
          const LayoutSlot& slot_desc = *desc.find_slot(ix.slot_entry(i).tensor->slot);
          const TensorStrategy adapted = adapt_to_slot(desc, slot_desc, strategy);
          per_slot.push_back(why_not(desc, slot_desc, adapted) ? TensorStrategy{} : adapted);
        }
        // A softmax's output is recomputed with its attention core, where it is in one.
        if (recomputes(strategy.form) && ix.storage_entries[g].core < 0) {
          for (size_t k = 0; k < per_slot.size(); ++k) {
            if (fit(ix.slot(st.slots[k]).layer).kind == LayerKind::softmax) per_slot[k] = TensorStrategy{};
          }
        }
        const bool changes = std::any_of(per_slot.begin(), per_slot.end(), [](const auto& x) { return !x.is_keep(); });
        const bool seen = std::any_of(list.begin(), list.end(), [&](const Candidate& c) { return c.per_slot == per_slot; });
        if (changes && !seen) list.push_back({strategy, per_slot});
      }
    }
    for (SegmentEntry& seg : ix.segment_entries) {
      seg.input_candidates.push_back(TensorStrategy{});
      for (const TensorStrategy& input : searched.segment_input) {
        if (input.swap && !ix.target.has_host_link()) continue;
        if (rounds_values(input.form) && seg.input->kind != SlotKind::activation) continue;
        seg.input_candidates.push_back(input);
      }
    }
  }
};

// Per layer, the bytes of the storages that a recomputed segment's layers
// save first at it (its input's storage aside, which the segment keeps), as
// keep's figures hold them: what the recompute has made again by then.
std::vector<double> remade_by_recompute(const AtBatch& at) {
  const Index& ix = *at.index;
  std::vector<double> out(ix.layers.size(), 0.0);
  for (size_t g = 0; g < ix.storages.size(); ++g) {
    for (int slot : ix.storages[g].slots) {
      const int layer = ix.slot(slot).layer, segment = ix.layer(layer).segment;
      if (segment < 0) continue;
      if (ix.segment(segment).input_storage != static_cast<int>(g)) {
        out[static_cast<size_t>(layer)] += at.storage_bytes(static_cast<int>(g));
      }
      break;
    }
  }
  return out;
}

}  // namespace

WorldFacts::WorldFacts(const LayerModel& m, const DataParallel& data_parallel)
    : world(data_parallel), parameter_copy_bytes(m.layers.size(), 0.0), expert(m.layers.size(), false) {
  world.check();
  const bool copies = !computes_with_held_weights(m, world);
  const bool experts_apart = world.expert_ranks_apart() > 0;
  double weights = 0, expert_weights = 0;
  for (size_t j = 0; j < m.layers.size(); ++j) {
    if (copies) parameter_copy_bytes[j] = static_cast<double>(m.layers[j].parameter_copy_bytes);
    expert[j] = experts_apart && in_expert(m.layers[j].path);
    weights += static_cast<double>(m.layers[j].parameter_bytes);
    if (expert[j]) expert_weights += static_cast<double>(m.layers[j].parameter_bytes);
  }
  optimizer_ranks = model::optimizer_ranks(m, world);
  expert_weight_share = weights > 0 ? expert_weights / weights : 0;
}

Index::Index(const LayerModel& m, const Target& t) : model(&m), target(t), layers(m.layers.size()) {
  for (size_t j = 0; j < m.layers.size(); ++j) {
    layers[j].invert_seconds_per_byte = t.invert_extra_seconds(m.layers[j].kind, 1);
    const int repeats = m.layers[j].repeats;
    if (repeats > 1 && !runs.empty() && runs.back().repeats == repeats && runs.back().end == j) {
      ++runs.back().end;
    } else {
      runs.push_back({j, j + 1, repeats});
    }
  }
  Builder build{*this, m};
  build.segments_and_points();
  build.slots_and_storages();
  build.attention_cores();
  build.candidates();
  build.backward_uses();
  const bool stored = std::any_of(m.layers.begin(), m.layers.end(), [](const LayerFit& l) {
    return !l.stored_forward_headroom.empty() || !l.stored_backward_headroom.empty() || !l.stored_backward_gap_headroom.empty();
  });
  if (stored && !slots.empty()) {
    const Plan step = load_plan(narrowest_codec_plan(), m.layout(), m.network);
    for (size_t i = 0; i < slots.size(); ++i)
      stored_step.push_back(step.tensor(fit(slots[i].layer).path, slot_entries[i].tensor->slot));
  }
}

AtBatch::AtBatch(std::shared_ptr<const Index> shared, std::shared_ptr<const WorldFacts> facts, int64_t batch_size)
    : index(std::move(shared)), world(std::move(facts)), batch(batch_size) {
  if (batch < 1) throw InputError("batch " + std::to_string(batch) + ": a batch has at least one sample");
  const Index& ix = *index;
  const LayerModel& model = *ix.model;
  const double b = static_cast<double>(batch);
  // A stage of a mixture of experts has tens of thousands of layers: each vector allocated once.
  storage_sizes.reserve(ix.storage_entries.size());
  slots.reserve(ix.slots.size());
  layers.reserve(ix.layers.size());
  segments.reserve(ix.segments.size());
  gathered_bytes.reserve(ix.points.size());

  for (const StorageEntry& facts : ix.storage_entries) {
    storage_sizes.push_back(scaled_by(facts.bytes_per_sample, facts.grows, b));
  }
  for (size_t i = 0; i < ix.slots.size(); ++i) {
    const SavedTensorProfile& t = *ix.slot_entries[i].tensor;
    const int64_t numel = numel_at(t, b);
    slots.push_back({numel, static_cast<double>(numel) * t.element_size});
    double& whole = storage_sizes[static_cast<size_t>(ix.slots[i].storage)];
    whole = std::max(whole, slots.back().bytes);
  }
  keep_bytes.resize(ix.points.size());
  // remade_through[j]: what the layers before j remade, so that each R point
  // takes a difference (summed layer by layer, a block of a mixture's
  // hundreds of layers took their square).
  const std::vector<double> remade = remade_by_recompute(*this);
  std::vector<double> remade_through(remade.size() + 1, 0.0);
  for (size_t j = 0; j < remade.size(); ++j) remade_through[j + 1] = remade_through[j] + remade[j];
  for (size_t p = 0; p < ix.points.size(); ++p) {
    const TimelinePoint& point = ix.points[p];
    const LayerFit& layer = ix.fit(point.layer);
    switch (point.phase) {
      case Phase::forward_gap: keep_bytes[p] = layer.forward_gap_peak.at(b); break;
      case Phase::forward: keep_bytes[p] = forward_peak_at(layer, b); break;
      case Phase::backward_gap: keep_bytes[p] = layer.backward_gap_peak.at(b); break;
      case Phase::backward: keep_bytes[p] = backward_peak_at(layer, b); break;
      case Phase::recompute: {
        // The recompute runs the segment's forward again from the start of
        // its backward: what keep's forward held at the layer beyond its
        // start, less the storages its layers save so far, which the plan's
        // timeline makes again at their savers (and keep's figures hold all
        // of from the segment's start). What remains is what no slot saves
        // yet is still live: a frozen projection's input, read again by the
        // adapter beside it.
        const Segment& seg = ix.segment(point.segment);
        const double saved =
            remade_through[static_cast<size_t>(point.layer) + 1] - remade_through[static_cast<size_t>(seg.first_layer)];
        keep_bytes[p] = ix.fit(seg.last_layer).backward_start.at(b) + forward_peak_at(layer, b) -
                        ix.fit(seg.first_layer).forward_start.at(b) - saved;
        break;
      }
    }
  }
  for (const LmHead& head : ix.lm_heads) {
    lm_head_chunk_batches.push_back(std::min(b, static_cast<double>(lm_head_chunk_rows(head.vocab)) / head.rows_per_sample));
  }
  // A layer stores its tensors once its output is there.
  for (size_t j = 0; j < ix.layers.size(); ++j) {
    const LayerFit& layer = model.layers[j];
    const double output = (layer.output_bytes_per_sample + ix.layers[j].created_bytes_per_sample) * b;
    LayerAtBatch at;
    at.forward_s = ix.target.forward_seconds[j].at(b);
    at.backward_s = ix.target.backward_seconds[j].at(b);
    const double output_after_stores = traits(layer.kind).stores_before_output ? 0 : output;
    at.forward_headroom = std::max(0.0, forward_peak_at(layer, b) - layer.forward_start.at(b) - output_after_stores);
    at.backward_headroom = std::max(0.0, backward_peak_at(layer, b) - layer.backward_start.at(b));
    layers.push_back(at);
  }
  for (size_t s = 0; s < ix.segments.size(); ++s) {
    const SavedTensorProfile& input = *ix.segment_entries[s].input;
    const int64_t numel = numel_at(input, b);
    segments.push_back({ix.target.recompute_seconds[s].at(b), numel, static_cast<double>(numel) * input.element_size});
  }
  optimizer_s = ix.target.optimizer_seconds.at(b);
  rest_s = ix.target.rest_seconds.at(b);
  unattributed_bytes = model.unattributed_peak.at(b);
  optimizer_peak_bytes = model.optimizer_peak.at(b);
  // A data-parallel rank: the same step with its share of the static state
  // and the exchange's buffers; with ZeRO, it steps its shard alone.
  const DataParallel& ranks = data_parallel();
  const double shift = rank_bytes_shift(model, ranks);
  const GatheredWeights gathered{model, ranks};
  for (size_t p = 0; p < ix.points.size(); ++p) {
    const TimelinePoint& point = ix.points[p];
    double held = 0;
    switch (point.phase) {
      case Phase::forward_gap: break;
      case Phase::forward: held = gathered.forward(point.layer); break;
      case Phase::backward_gap: held = gathered.before_backward(point.layer); break;
      case Phase::backward: held = gathered.backward(point.layer); break;
      case Phase::recompute: held = gathered.recompute(point.layer, ix.segment(point.segment).last_layer); break;
    }
    gathered_bytes.push_back(held);
    keep_bytes[p] += shift + held;
  }
  optimizer_peak_bytes += shift;
  // An expert's state is sharded over the ranks holding it (DataParallel::expert_ranks_apart), the others' over all.
  const int expert_ranks = ranks.expert_ranks_apart();
  if (ranks.zero_stage >= 1) optimizer_s /= world->optimizer_ranks;
  if (ranks.active() && (ranks.zero_stage == 1 || ranks.zero_stage == 2)) {
    const double gathered = whole_static(model, ranks).weights;
    const double experts = gathered * world->expert_weight_share;
    parameter_gather_s = ranks.link.gather_seconds(gathered - experts, ranks.ranks) +
                         (expert_ranks > 1 ? ranks.link.gather_seconds(experts, expert_ranks) : 0);
  }
}

double AtBatch::allocated_storage(int g) const {
  const int layer = index->storage(g).first_layer;
  const double copies = index->model->layers[static_cast<size_t>(layer)].repeats;
  return copies * target().allocated(storage_bytes(g) / copies);
}

double AtBatch::core_recompute_seconds(int c) const {
  const AttentionCore& core = index->core(c);
  double seconds = 0;
  for (int l : {core.scores, core.softmax, core.drop, core.context}) {
    if (l >= 0) seconds += layer(l).forward_s;
  }
  return seconds;
}

}  // namespace papaya::model::plan_space
