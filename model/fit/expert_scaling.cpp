#include "model/fit/expert_scaling.h"

#include <map>
#include <utility>
#include <vector>

#include "model/alike_experts.h"
#include "model/error.h"
#include "model/network_layout.h"

namespace papaya::model {
namespace {

struct Expert {
  std::string prefix;         // "<block>.moe.experts.<i>."
  size_t first = 0, end = 0;  // its layers
};

// Each mixture block's experts in forward order, a block after another.
std::vector<std::vector<Expert>> experts_by_block(const LayerModel& m, int built, const std::string& label) {
  std::vector<std::vector<Expert>> out;
  std::string block;
  for (size_t j = 0; j < m.layers.size(); ++j) {
    const std::string prefix = expert_of_path(m.layers[j].path);
    if (prefix.empty()) continue;
    const std::string of = prefix.substr(0, prefix.find(".moe.experts."));
    if (out.empty() || of != block) out.emplace_back(), block = of;
    std::vector<Expert>& experts = out.back();
    if (!experts.empty() && experts.back().prefix == prefix && experts.back().end == j) {
      ++experts.back().end;
    } else {
      experts.push_back({prefix, j, j + 1});
    }
  }
  for (const auto& experts : out) {
    bool runs = static_cast<int>(experts.size()) == built;
    for (size_t e = 1; runs && e < experts.size(); ++e) {
      runs = experts[e].first == experts[e - 1].end && experts[e].end - experts[e].first == experts[0].end - experts[0].first;
    }
    if (!runs) {
      throw InputError(label + ": a mixture's experts are not " + std::to_string(built) +
                       " runs of alike layers one after another (" + experts.front().prefix + "...)");
    }
  }
  return out;
}

LinearCurve operator-(const LinearCurve& a, const LinearCurve& b) { return {a.per_sample - b.per_sample, a.fixed - b.fixed}; }
LinearCurve operator+(const LinearCurve& a, const LinearCurve& b) { return {a.per_sample + b.per_sample, a.fixed + b.fixed}; }

SaturatingCurve operator+(const SaturatingCurve& a, const SaturatingCurve& b) {
  return {a.floor + b.floor, a.per_sample + b.per_sample, a.fixed + b.fixed};
}

// Every reference under `from` (a prefix) made one under `to`.
void rename(std::string& text, const std::string& from, const std::string& to) {
  if (text.rfind(from, 0) == 0) text = to + text.substr(from.size());
}

void rename(LayerFit& layer, const std::string& from, const std::string& to) {
  rename(layer.path, from, to);
  rename(layer.segment, from, to);
  for (auto& t : layer.saved) rename(t.storage, from, to), rename(t.last_forward_use, from, to), rename(t.view, from, to);
  for (auto& s : layer.output_saved_by) rename(s, from, to);
}

}  // namespace

LayerModel scale_experts(const LayerModel& profiled, const std::vector<ExpertRun>& runs, double static_bytes,
                         const std::string& label) {
  const int built = static_cast<int>(profiled_expert_ids(runs).size());
  int experts = 0;
  for (const ExpertRun& run : runs) experts += run.count;
  if (built >= experts) {
    throw InputError(label + ": " + std::to_string(built) + " experts profiled of " + std::to_string(experts) +
                     ": a few stand for more");
  }
  const std::vector<std::vector<Expert>> blocks = experts_by_block(profiled, built, label);
  if (blocks.empty()) throw InputError(label + ": no mixture's experts to stand for " + std::to_string(experts));
  const size_t n = profiled.layers.size();
  std::vector<LinearCurve> held_from(n + 1);                // what the experts not built hold more, from each layer on
  std::map<size_t, int> standing;                           // a standing expert's layers: how many experts each stands for
  std::map<size_t, SaturatingCurve> forward_s, backward_s;  // and their times
  std::map<std::string, SaturatingCurve> recomputed;        // a segment's forward again: the experts more
  std::vector<std::pair<std::string, std::string>> renames;
  for (const auto& block : blocks) {
    const std::string mixture = block[0].prefix.substr(0, block[0].prefix.find(".moe.experts.")) + ".moe.experts.";
    std::vector<std::pair<std::string, std::string>> block_renames;  // by built expert, each to its id
    size_t b = 0;                                                    // the run's first built expert
    for (const ExpertRun& run : runs) {
      if (run.count < 3) {  // each of its experts built, as it is
        for (int e = 0; e < run.count; ++e, ++b)
          block_renames.push_back({block[b].prefix, mixture + std::to_string(run.first + e) + "."});
        continue;
      }
      const Expert &first = block[b], &second = block[b + 1];
      b += 2;
      // One expert's saved tensors and what the block's code keeps for it.
      const LinearCurve one = profiled.layers[second.first].forward_start - profiled.layers[first.first].forward_start;
      const int missing = run.count - 2;
      held_from[second.first] = held_from[second.first] + LinearCurve{missing * one.per_sample, missing * one.fixed};
      for (size_t i = 0; i < first.end - first.first; ++i) {
        standing[first.first + i] = run.count - 1;
        for (const Expert* e : {&first, &second}) {  // the mean of the two, for run.count - 1
          const LayerFit& l = profiled.layers[e->first + i];
          forward_s[first.first + i] = forward_s[first.first + i] + l.forward_seconds.times(0.5 * (run.count - 1));
          backward_s[first.first + i] = backward_s[first.first + i] + l.backward_seconds.times(0.5 * (run.count - 1));
          if (!l.segment.empty()) recomputed[l.segment] = recomputed[l.segment] + l.forward_seconds.times(0.5 * missing);
        }
      }
      block_renames.push_back({first.prefix, mixture + std::to_string(run.first) + "."});
      block_renames.push_back({second.prefix, mixture + std::to_string(run.first + run.count - 1) + "."});
    }
    // The last built first: an expert's id is never below its place among
    // the built, so no layer is renamed twice.
    for (auto it = block_renames.rbegin(); it != block_renames.rend(); ++it) {
      if (it->first != it->second) renames.push_back(*it);
    }
  }
  for (size_t j = 1; j <= n; ++j) held_from[j] = held_from[j] + held_from[j - 1];

  const double shift = static_bytes - profiled.static_bytes;
  LayerModel out = profiled.without_layers();
  out.segments = profiled.segments;
  for (size_t j = 0; j < n; ++j) {
    LayerFit layer = profiled.layers[j];
    if (standing.count(j)) {
      stand_for(layer, standing[j]);
      layer.forward_seconds = forward_s[j];
      layer.backward_seconds = backward_s[j];
      layer.forward_timed.clear();  // one expert's points; the curves stand for many
      layer.backward_timed.clear();
    }
    for (LinearCurve* figure : {&layer.forward_start, &layer.forward_peak, &layer.backward_start, &layer.backward_peak,
                                &layer.forward_gap_peak, &layer.backward_gap_peak}) {
      *figure = *figure + held_from[j] + LinearCurve{0, shift};
    }
    for (const auto& [from, to] : renames) rename(layer, from, to);
    out.layers.push_back(std::move(layer));
  }
  for (SegmentFit& s : out.segments) {
    if (recomputed.count(s.path)) s.recompute_seconds = s.recompute_seconds + recomputed[s.path];
    for (const auto& [from, to] : renames) {
      rename(s.input.storage, from, to), rename(s.input.view, from, to), rename(s.input.last_forward_use, from, to);
    }
  }
  out.static_bytes = static_bytes;
  out.optimizer_peak.fixed += shift;
  out.optimizer_seconds = profiled.optimizer_seconds.times(static_bytes / profiled.static_bytes);
  return out;
}

}  // namespace papaya::model
