#pragma once
// The shape of a network as papaya's model and planner see it, without
// LibTorch: its layers in forward order, the tensors each saves for backward
// (its slots), and the segments that checkpointing can recompute. The
// executor derives it from a built network (and a probe forward pass, which
// shows which slots share storage); a profile carries it.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/layer_kind.h"
#include "model/slot_kind.h"

namespace papaya::model {

struct LayoutSlot {
  std::string name;  // "input", "output", "mask", "q", ...
  SlotKind kind;
  // "path:slot" of the first slot (in forward order) that saves the same
  // storage — itself if none before it; empty where not measured. A storage
  // saved by several slots is held once.
  std::string storage;
};

struct LayoutLayer {
  std::string path;  // "blocks.3.mlp.fc1"
  LayerKind kind;
  std::vector<LayoutSlot> slots;
  std::string segment;  // the enclosing segment's path, "" if none
  // "path:slot" of the slots that save this layer's output (e.g. a GELU's
  // output saved as the next linear's input); empty where not measured.
  std::vector<std::string> output_saved_by;

  const LayoutSlot* find_slot(const std::string& name) const;
};

struct NetworkLayout {
  std::vector<LayoutLayer> layers;    // forward order
  std::vector<std::string> segments;  // forward order

  const LayoutLayer* find_layer(const std::string& path) const;
};

// The layout that a profile or a fitted model carries: `segments` have a
// path; `layers` a path, kind, segment, output_saved_by and saved tensors
// (slot, kind, storage).
template <typename Segments, typename Layers>
NetworkLayout layout_of(const Segments& segments, const Layers& layers) {
  NetworkLayout layout;
  for (const auto& s : segments) layout.segments.push_back(s.path);
  for (const auto& l : layers) {
    LayoutLayer desc{l.path, l.kind, {}, l.segment, l.output_saved_by};
    for (const auto& s : l.saved) desc.slots.push_back({s.slot, s.kind, s.storage});
    layout.layers.push_back(std::move(desc));
  }
  return layout;
}

// An attention core's layers: scores, softmax, its dropout (-1: none), context.
struct AttentionCoreLayers {
  int scores = -1, softmax = -1, drop = -1, context = -1;
};

// The attention core whose softmax is `layer` of `layers` (anything with a
// `kind`: LayoutLayer, LayerFit): the scores just before it, the context just
// after it or after its dropout. nullopt for any other layer (a mixture's
// router has a softmax too).
template <typename Layers>
std::optional<AttentionCoreLayers> attention_core_at(const Layers& layers, int layer) {
  const auto kind = [&](int j) {
    return j >= 0 && j < static_cast<int>(layers.size()) ? layers[static_cast<size_t>(j)].kind : LayerKind::module;
  };
  if (kind(layer) != LayerKind::softmax || kind(layer - 1) != LayerKind::attention_scores) return std::nullopt;
  AttentionCoreLayers core{layer - 1, layer, kind(layer + 1) == LayerKind::dropout ? layer + 1 : -1, -1};
  core.context = core.drop >= 0 ? layer + 2 : layer + 1;
  if (kind(core.context) != LayerKind::attention_context) return std::nullopt;
  return core;
}

// The transformer block a layer path lies in ("blocks.3.mlp.fc1": 3), -1 if none.
int block_of_path(const std::string& path);

// The expert a layer path (or "path:slot") lies in, as its prefix
// "<block>.moe.experts.<i>." ("blocks.3.moe.experts.7.up": "blocks.3.moe.experts.7."),
// "" if none.
std::string expert_of_path(const std::string& path);
// Whether it lies in one (expert_of_path is not ""), without making the prefix:
// asked of every layer each time a layout search prices a stage.
bool in_expert(const std::string& path);

// "path:slot": a saved tensor's key in plans, profiles and models.
std::string tensor_key(const std::string& path, const std::string& slot);

}  // namespace papaya::model
