#include "cli/report/step_timeline.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "model/plan_space/plan_space.h"

namespace papaya::cli {
namespace {

using model::PlanSpace;

bool same_point(const model::TimelinePoint& a, const model::TimelinePoint& b) {
  return a.phase == b.phase && a.layer == b.layer && a.segment == b.segment;
}

std::string point_name(const model::LayerModel& m, const model::TimelinePoint& point) {
  return std::string(model::to_string(point.phase)) + " " + m.layers[static_cast<size_t>(point.layer)].path;
}

bool recomputed(const PlanSpace& space, const model::Assignment& a, int layer) {
  for (size_t s = 0; s < space.segments().size(); ++s) {
    const auto& seg = space.segments()[s];
    if (a.segments[s].recompute && seg.first_layer <= layer && layer <= seg.last_layer) return true;
  }
  return false;
}

// What one decision saves and costs: device bytes held fewer from forward to
// backward than keep's, seconds added to the step (codecs, recomputation),
// and the host link's seconds, which swapping may hide.
struct Saving {
  double bytes = 0, seconds = 0, link_seconds = 0;
};

Saving saving(const PlanSpace::Option& keep, const PlanSpace::Option& chosen) {
  return {keep.device_bytes - chosen.device_bytes, chosen.codec_seconds + chosen.recompute_seconds, chosen.link_seconds};
}

// The plan by layer: each layer outside a recomputed segment whose saved
// tensors are not all kept, what they are stored as and what that saves;
// each recomputed segment, its input's form and what recomputing saves.
nlohmann::json plan_by_layer(const model::LayerModel& m, const PlanSpace& space, const model::Assignment& a) {
  std::vector<std::pair<int, nlohmann::json>> rows;  // (first layer, row)
  std::vector<Saving> by_layer(m.layers.size());
  for (size_t g = 0; g < space.storages().size(); ++g) {
    const auto& storage = space.storages()[g];
    if (storage.slots.empty() || recomputed(space, a, storage.first_layer)) continue;
    std::vector<model::TensorStrategy> per_slot;
    for (int i : storage.slots) per_slot.push_back(a.slots[static_cast<size_t>(i)]);
    const auto options = space.options(static_cast<int>(g));
    for (const auto& option : options) {
      if (option.per_slot != per_slot || option.strategy.is_keep()) continue;
      const Saving s = saving(options.front(), option);
      Saving& layer = by_layer[static_cast<size_t>(storage.first_layer)];
      layer.bytes += s.bytes;
      layer.seconds += s.seconds;
      layer.link_seconds += s.link_seconds;
      break;
    }
  }
  for (size_t j = 0; j < m.layers.size(); ++j) {
    if (recomputed(space, a, static_cast<int>(j))) continue;
    std::string tensors;
    for (int i = 0; i < static_cast<int>(space.slots().size()); ++i) {
      const auto& slot = space.slots()[static_cast<size_t>(i)];
      const model::TensorStrategy& s = a.slots[static_cast<size_t>(i)];
      if (slot.layer != static_cast<int>(j) || s.is_keep()) continue;
      const int first = space.storages()[static_cast<size_t>(slot.storage)].first_layer;
      tensors += (tensors.empty() ? "" : ", ") + slot.key.substr(slot.key.rfind(':') + 1) + ": " + s.name() +
                 (first == static_cast<int>(j) ? "" : " (stored with " + m.layers[static_cast<size_t>(first)].path + "'s)");
    }
    if (tensors.empty()) continue;
    const Saving& s = by_layer[j];
    rows.push_back({static_cast<int>(j),
                    {{"layer", m.layers[j].path},
                     {"tensors", tensors},
                     {"segment", ""},
                     {"bytes_saved", s.bytes},
                     {"seconds_added", s.seconds},
                     {"host_link_seconds", s.link_seconds}}});
  }
  for (size_t s = 0; s < space.segments().size(); ++s) {
    if (!a.segments[s].recompute) continue;
    const auto cost = space.segment_cost(static_cast<int>(s));
    const auto& input = a.segments[s].input;
    for (const auto& option : cost.input_options) {
      if (!(option.strategy == input)) continue;
      rows.push_back({space.segments()[s].first_layer,
                      {{"layer", space.segments()[s].path},
                       {"tensors", "recomputed"},
                       {"segment", a.segments[s].name()},
                       {"bytes_saved", cost.freed_bytes - option.device_bytes},
                       {"seconds_added", cost.recompute_seconds + option.codec_seconds},
                       {"host_link_seconds", option.link_seconds}}});
      break;
    }
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  nlohmann::json out = nlohmann::json::array();
  for (auto& row : rows) out.push_back(std::move(row.second));
  return out;
}

}  // namespace

nlohmann::json step_timeline(const model::LayerModel& m, const model::Target& target, const model::Plan& plan, int64_t batch) {
  const PlanSpace space(m, target, batch);
  const model::Assignment a = space.assignment(plan);
  const model::Estimate estimate = space.evaluate(a);
  const model::TimelineParts parts = space.timeline_parts(a);
  const auto& points = space.points();
  // The points of the step: a segment that is not recomputed has no recompute.
  std::vector<size_t> shown;
  for (size_t p = 0; p < points.size(); ++p) {
    const model::TimelinePoint& point = points[p];
    if (point.phase != model::Phase::recompute || a.segments[static_cast<size_t>(point.segment)].recompute) shown.push_back(p);
  }
  nlohmann::json labels = nlohmann::json::array(), bands = nlohmann::json::array(), largest = nlohmann::json::array();
  int peak_point = -1;
  for (size_t p : shown) {
    if (same_point(points[p], estimate.peak_at)) peak_point = static_cast<int>(labels.size());
    labels.push_back(point_name(m, points[p]));
  }
  for (const model::HeldBand& band : parts.bands) {
    nlohmann::json bytes = nlohmann::json::array();
    bool held = false;  // somewhere in the step
    for (size_t p : shown) {
      bytes.push_back(band.bytes[p]);
      held = held || band.bytes[p] != 0;
    }
    if (held) bands.push_back({{"name", band.name}, {"bytes", bytes}});
  }
  // The three largest saved tensors at each point.
  std::vector<const model::HeldTensor*> by_size;
  for (const model::HeldTensor& t : parts.tensors) by_size.push_back(&t);
  std::stable_sort(by_size.begin(), by_size.end(), [](auto* x, auto* y) { return x->bytes > y->bytes; });
  for (size_t p : shown) {
    nlohmann::json here = nlohmann::json::array();
    for (const model::HeldTensor* t : by_size) {
      if (here.size() == 3) break;
      if (t->from <= static_cast<int>(p) && static_cast<int>(p) <= t->to) {
        here.push_back({space.storages()[static_cast<size_t>(t->storage)].key, t->form, t->bytes});
      }
    }
    largest.push_back(here);
  }
  return {{"plan", plan.name},
          {"peak_bytes", estimate.peak_bytes},
          {"peak_at", point_name(m, estimate.peak_at) + (estimate.peak_in_optimizer_step ? " (the optimizer's step)" : "")},
          {"peak_point", peak_point},
          {"peak_in_optimizer_step", estimate.peak_in_optimizer_step},
          {"labels", labels},
          {"bands", bands},
          {"largest", largest},
          {"layers", plan_by_layer(m, space, a)}};
}

}  // namespace papaya::cli
