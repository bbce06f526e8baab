#include "model/alike_experts.h"

#include <cmath>
#include <cstdint>
#include <set>
#include <utility>

#include "model/network_layout.h"

namespace papaya::model {

namespace {

// A reference as seen from the expert under `prefix`: its own layers by role.
std::string local(const std::string& reference, const std::string& prefix) {
  return reference.rfind(prefix, 0) == 0 ? "~" + reference.substr(prefix.size()) : reference;
}

bool near(double a, double b) { return std::abs(a - b) <= 1e-9 * (std::abs(a) + std::abs(b)); }

// Whether a pass peaks as far above its start in both (within a byte, or
// the fit's rounding of the allocator's totals).
bool same_rise(const LinearCurve& peak_a, const LinearCurve& start_a, const LinearCurve& peak_b, const LinearCurve& start_b) {
  const auto close = [](double a, double b, double scale) { return std::abs(a - b) <= 1 + 1e-12 * scale; };
  return close(peak_a.per_sample - start_a.per_sample, peak_b.per_sample - start_b.per_sample,
               std::abs(start_a.per_sample) + std::abs(start_b.per_sample)) &&
         close(peak_a.fixed - start_a.fixed, peak_b.fixed - start_b.fixed, std::abs(start_a.fixed) + std::abs(start_b.fixed));
}

bool same_points(const std::vector<Sample>& a, const std::vector<Sample>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].batch != b[i].batch || std::abs(a[i].value - b[i].value) > 1 + 1e-12 * std::abs(a[i].value)) return false;
  }
  return true;
}

bool same_tensor(const SavedTensorProfile& a, const std::string& pa, const SavedTensorProfile& b, const std::string& pb) {
  return a.slot == b.slot && a.kind == b.kind && a.dtype == b.dtype && a.element_size == b.element_size &&
         a.sample_shape == b.sample_shape && a.per_sample == b.per_sample && a.numel_per_sample == b.numel_per_sample &&
         a.storage_bytes_per_sample == b.storage_bytes_per_sample && a.held_by_caller == b.held_by_caller &&
         a.saved_after_forward == b.saved_after_forward && local(a.storage, pa) == local(b.storage, pb) &&
         local(a.view, pa) == local(b.view, pb) && local(a.last_forward_use, pa) == local(b.last_forward_use, pb);
}

bool alike_layers(const LayerFit& a, const std::string& pa, const LayerFit& b, const std::string& pb) {
  if (local(a.path, pa) != local(b.path, pb) || a.kind != b.kind || a.segment != b.segment || a.repeats != 1 || b.repeats != 1 ||
      a.saved.size() != b.saved.size() || a.output_saved_by.size() != b.output_saved_by.size() ||
      a.output_bytes_per_sample != b.output_bytes_per_sample || a.parameter_bytes != b.parameter_bytes ||
      a.frozen_bytes != b.frozen_bytes || a.shared_trainable_bytes != b.shared_trainable_bytes ||
      a.parameter_copy_bytes != b.parameter_copy_bytes || !near(a.forward_flops_per_sample, b.forward_flops_per_sample) ||
      !near(a.forward_bytes_moved_per_sample, b.forward_bytes_moved_per_sample)) {
    return false;
  }
  for (size_t i = 0; i < a.saved.size(); ++i) {
    if (!same_tensor(a.saved[i], pa, b.saved[i], pb)) return false;
  }
  for (size_t i = 0; i < a.output_saved_by.size(); ++i) {
    if (local(a.output_saved_by[i], pa) != local(b.output_saved_by[i], pb)) return false;
  }
  return same_rise(a.forward_peak, a.forward_start, b.forward_peak, b.forward_start) &&
         same_rise(a.forward_gap_peak, a.forward_start, b.forward_gap_peak, b.forward_start) &&
         same_rise(a.backward_peak, a.backward_start, b.backward_peak, b.backward_start) &&
         same_rise(a.backward_gap_peak, a.backward_start, b.backward_gap_peak, b.backward_start) &&
         same_points(a.forward_headroom, b.forward_headroom) && same_points(a.backward_headroom, b.backward_headroom) &&
         same_points(a.stored_forward_headroom, b.stored_forward_headroom) &&
         same_points(a.stored_backward_headroom, b.stored_backward_headroom) &&
         same_points(a.stored_backward_gap_headroom, b.stored_backward_gap_headroom);
}

struct Expert {
  std::string prefix;
  size_t first = 0, end = 0;  // its layers
};

bool alike(const LayerModel& m, const Expert& x, const Expert& y) {
  if (x.end - x.first != y.end - y.first) return false;
  for (size_t i = 0; i < x.end - x.first; ++i) {
    if (!alike_layers(m.layers[x.first + i], x.prefix, m.layers[y.first + i], y.prefix)) return false;
  }
  return true;
}

// The experts a layer outside them refers to (a slot's storage, view or
// last use, an output saved, a segment's input): they stay as they are.
std::set<std::string> referenced_from_outside(const LayerModel& m) {
  std::set<std::string> out;
  const auto note = [&](const std::string& reference, const std::string& from) {
    const std::string prefix = expert_of_path(reference);
    if (!prefix.empty() && prefix != from) out.insert(prefix);
  };
  for (const LayerFit& l : m.layers) {
    const std::string own = expert_of_path(l.path);
    for (const auto& t : l.saved) {
      note(t.storage, own), note(t.view, own), note(t.last_forward_use, own);
    }
    for (const std::string& s : l.output_saved_by) note(s, own);
  }
  for (const SegmentFit& s : m.segments) note(s.input.storage, "");
  return out;
}

SaturatingCurve sum(const SaturatingCurve& a, const SaturatingCurve& b) {
  return {a.floor + b.floor, a.per_sample + b.per_sample, a.fixed + b.fixed};
}

// Two layers' timed points summed batch by batch; none unless both were
// timed at the same batches.
std::vector<Sample> sum(const std::vector<Sample>& a, const std::vector<Sample>& b) {
  if (a.size() != b.size()) return {};
  std::vector<Sample> out;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k].batch != b[k].batch) return {};
    out.push_back({a[k].batch, a[k].value + b[k].value});
  }
  return out;
}

}  // namespace

LayerModel collapse_alike_experts(LayerModel model) {
  // The experts one after another, each a run of layers under its prefix.
  std::vector<Expert> experts;
  for (size_t j = 0; j < model.layers.size(); ++j) {
    const std::string prefix = expert_of_path(model.layers[j].path);
    if (prefix.empty()) continue;
    if (!experts.empty() && experts.back().prefix == prefix && experts.back().end == j) {
      ++experts.back().end;
    } else {
      experts.push_back({prefix, j, j + 1});
    }
  }
  std::set<std::string> seen;
  for (const Expert& e : experts) {
    if (!seen.insert(e.prefix).second) return model;  // an expert's layers apart: not one after another
  }
  const std::set<std::string> pinned = referenced_from_outside(model);
  const auto block_of = [](const Expert& e) { return e.prefix.substr(0, e.prefix.find(".moe.experts.")); };

  // Each layer of a run's first expert stands for that layer of all but the
  // run's last; the others between are dropped, their times added to it.
  std::vector<int> repeats(model.layers.size(), 1);
  std::vector<size_t> standing_in(model.layers.size(), SIZE_MAX);  // a dropped layer's: in model.layers
  for (size_t i = 0; i < experts.size();) {
    size_t end = i + 1;  // the run [i, end)
    if (!pinned.count(experts[i].prefix)) {
      while (end < experts.size() && block_of(experts[end]) == block_of(experts[i]) && !pinned.count(experts[end].prefix) &&
             experts[end].first == experts[end - 1].end && alike(model, experts[end - 1], experts[end])) {
        ++end;
      }
    }
    if (end - i >= 3) {
      const Expert& first = experts[i];
      for (size_t j = first.first; j < first.end; ++j) repeats[j] = static_cast<int>(end - i - 1);
      for (size_t e = i + 1; e + 1 < end; ++e) {
        for (size_t j = experts[e].first; j < experts[e].end; ++j) standing_in[j] = first.first + (j - experts[e].first);
      }
    }
    i = end;
  }
  std::vector<LayerFit> layers = std::move(model.layers);
  model.layers.clear();
  std::vector<size_t> kept_at(layers.size(), SIZE_MAX);
  for (size_t j = 0; j < layers.size(); ++j) {
    if (standing_in[j] != SIZE_MAX) {
      LayerFit& first = model.layers[kept_at[standing_in[j]]];
      first.forward_seconds = sum(first.forward_seconds, layers[j].forward_seconds);
      first.backward_seconds = sum(first.backward_seconds, layers[j].backward_seconds);
      first.forward_timed = sum(first.forward_timed, layers[j].forward_timed);
      first.backward_timed = sum(first.backward_timed, layers[j].backward_timed);
      continue;
    }
    kept_at[j] = model.layers.size();
    model.layers.push_back(std::move(layers[j]));
    if (repeats[j] > 1) stand_for(model.layers.back(), repeats[j]);
  }
  return model;
}

void stand_for(LayerFit& l, int repeats) {
  const double r = repeats;
  l.repeats = repeats;
  l.forward_flops_per_sample *= r, l.forward_bytes_moved_per_sample *= r;
  l.parameter_bytes *= repeats, l.frozen_bytes *= repeats;
  l.shared_trainable_bytes *= repeats, l.parameter_copy_bytes *= repeats;
  for (SavedTensorProfile& t : l.saved) t.numel_per_sample *= r, t.storage_bytes_per_sample *= r;
}

void collapse_alike_experts(const std::vector<LayerModel*>& models) {
  std::vector<LayerModel> collapsed;
  for (const LayerModel* m : models) collapsed.push_back(collapse_alike_experts(*m));
  for (const LayerModel& c : collapsed) {
    const LayerModel& first = collapsed.front();
    if (c.layers.size() != first.layers.size()) return;
    for (size_t j = 0; j < c.layers.size(); ++j) {
      if (c.layers[j].path != first.layers[j].path || c.layers[j].repeats != first.layers[j].repeats) return;
    }
  }
  for (size_t i = 0; i < models.size(); ++i) *models[i] = std::move(collapsed[i]);
}

}  // namespace papaya::model
