// How long a step takes under a plan: compute per layer, and the swap copies
// around it.
#include "model/plan_space_step_time.h"

#include <algorithm>
#include <vector>

namespace papaya::model::plan_space {
namespace {

// One layer's part of a step.
struct LayerStep {
  double forward_s = 0, backward_s = 0;           // compute, codecs included
  double to_host_bytes = 0, from_host_bytes = 0;  // the swapped copies it stores and fetches
};

// The step's forward and backward with the part of swapping that does not
// hide behind compute. Copies run on one link per direction: a layer's copies
// to the host must be done before the layer two later starts its forward,
// and a layer's copies back are issued when the layer after it starts its
// backward and must be done before its own starts.
double overlapped_seconds(const Target& target, const std::vector<LayerStep>& layers) {
  const size_t n = layers.size();
  double clock = 0, link = 0;
  std::vector<double> copied(n, 0.0);
  for (size_t j = 0; j < n; ++j) {
    if (j >= 2) clock = std::max(clock, copied[j - 2]);
    clock += layers[j].forward_s;
    if (layers[j].to_host_bytes > 0) link = std::max(link, clock) + layers[j].to_host_bytes / target.d2h_bytes_per_s;
    copied[j] = link;
  }
  clock = std::max(clock, link);
  link = clock;
  double next_started = clock;  // when the backward of the layer after j started
  for (size_t j = n; j-- > 0;) {
    if (layers[j].from_host_bytes > 0) {
      link = std::max(link, next_started) + layers[j].from_host_bytes / target.h2d_bytes_per_s;
      clock = std::max(clock, link);
    }
    next_started = clock;
    clock += layers[j].backward_s;
  }
  return clock;
}

}  // namespace

double step_seconds(const AtBatch& at, const Held& h) {
  const Index& ix = *at.index;
  std::vector<LayerStep> layers;
  for (const LayerAtBatch& layer : at.layers) layers.push_back({layer.forward_s, layer.backward_s, 0, 0});
  const auto step = [&](int layer) -> LayerStep& { return layers[static_cast<size_t>(layer)]; };
  for (const StorageHeld& held : h.storages) {
    for (const Copy& c : held.copies) {
      step(c.created).forward_s += pack_seconds(at.target(), c.strategy, c.packed_from);
      for (const Use& u : c.uses) {
        step(u.charged_to).backward_s += use_seconds(at, c.strategy, u.charged_to, u.raw_bytes);
      }
      if (!c.strategy.swap) continue;
      step(c.created).to_host_bytes += c.host_bytes;
      step(c.fetched_by).from_host_bytes += c.host_bytes;
    }
  }
  for (size_t s = 0; s < ix.segments.size(); ++s) {
    if (h.recomputed[s]) step(ix.segments[s].last_layer).backward_s += at.segments[s].recompute_s;
  }
  if (h.lm_head_recomputed) step(ix.lm_head.layer).backward_s += at.layer(ix.lm_head.layer).forward_s;
  return overlapped_seconds(at.target(), layers) + at.optimizer_s + at.rest_s;
}

}  // namespace papaya::model::plan_space
