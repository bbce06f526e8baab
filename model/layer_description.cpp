#include "model/layer_description.h"

#include <set>

#include "model/error.h"
#include "model/network_layout.h"

namespace papaya::model {

nlohmann::json saved_tensor_to_json(const SavedTensorProfile& t) {
  nlohmann::json doc = {{"slot", t.slot},
                        {"kind", to_string(t.kind)},
                        {"dtype", t.dtype},
                        {"element_size", t.element_size},
                        {"sample_shape", t.sample_shape},
                        {"per_sample", t.per_sample},
                        {"numel_per_sample", t.numel_per_sample},
                        {"storage", t.storage},
                        {"storage_bytes_per_sample", t.storage_bytes_per_sample},
                        {"held_by_caller", t.held_by_caller},
                        {"last_forward_use", t.last_forward_use}};
  if (t.saved_after_forward) doc["saved_after_forward"] = true;
  if (!t.view.empty()) doc["view"] = t.view;
  return doc;
}

SavedTensorProfile saved_tensor_from_json(const nlohmann::json& doc) {
  SavedTensorProfile t;
  t.slot = doc.at("slot");
  t.kind = slot_kind_from_string(doc.at("kind"));
  t.dtype = doc.at("dtype");
  t.element_size = doc.at("element_size");
  t.sample_shape = doc.at("sample_shape").get<std::vector<int64_t>>();
  t.per_sample = doc.at("per_sample");
  t.numel_per_sample = doc.at("numel_per_sample");
  t.storage = doc.at("storage");
  t.storage_bytes_per_sample = doc.at("storage_bytes_per_sample");
  t.held_by_caller = doc.value("held_by_caller", false);
  t.last_forward_use = doc.value("last_forward_use", "");
  t.saved_after_forward = doc.value("saved_after_forward", false);
  t.view = doc.value("view", "");
  return t;
}

void add_layer_description_json(const LayerDescription& l, nlohmann::json& out) {
  nlohmann::json saved = nlohmann::json::array();
  for (const auto& s : l.saved) saved.push_back(saved_tensor_to_json(s));
  out["path"] = l.path;
  out["kind"] = to_string(l.kind);
  out["segment"] = l.segment;
  out["saved"] = saved;
  out["output_saved_by"] = l.output_saved_by;
  out["output_bytes_per_sample"] = l.output_bytes_per_sample;
  out["parameter_bytes"] = l.parameter_bytes;
  out["frozen_bytes"] = l.frozen_bytes;
  out["shared_trainable_bytes"] = l.shared_trainable_bytes;
  if (!l.shares_weights_of.empty()) out["shares_weights_of"] = l.shares_weights_of;
  out["parameter_copy_bytes"] = l.parameter_copy_bytes;
  out["forward_flops_per_sample"] = l.forward_flops_per_sample;
  out["forward_bytes_moved_per_sample"] = l.forward_bytes_moved_per_sample;
  if (l.repeats != 1) out["repeats"] = l.repeats;
}

LayerDescription layer_description_from_json(const nlohmann::json& doc, const std::string& where) {
  LayerDescription l;
  l.path = doc.at("path");
  l.kind = layer_kind_from_string(doc.at("kind"), where + "/kind");
  l.segment = doc.at("segment");
  for (const auto& s : doc.at("saved")) l.saved.push_back(saved_tensor_from_json(s));
  l.output_saved_by = doc.at("output_saved_by").get<std::vector<std::string>>();
  l.output_bytes_per_sample = doc.at("output_bytes_per_sample");
  l.parameter_bytes = doc.at("parameter_bytes");
  l.frozen_bytes = doc.value("frozen_bytes", int64_t{0});  // written before fine-tuning: all trained
  l.parameter_copy_bytes = doc.value("parameter_copy_bytes", int64_t{0});
  l.shared_trainable_bytes = doc.value("shared_trainable_bytes", int64_t{0});
  l.shares_weights_of = doc.value("shares_weights_of", std::string());
  l.forward_flops_per_sample = doc.at("forward_flops_per_sample");
  l.forward_bytes_moved_per_sample = doc.at("forward_bytes_moved_per_sample");
  l.repeats = doc.value("repeats", 1);
  return l;
}

void check_layer_references(const std::vector<const LayerDescription*>& layers, const std::vector<SegmentReference>& segments,
                            const std::string& label, const std::string& noun) {
  const auto require = [&](bool ok, const std::string& pointer, const std::string& why) {
    if (!ok) throw InputError(label + ": " + pointer + ": " + why);
  };
  std::set<std::string> segment_paths, paths, slots;
  for (size_t s = 0; s < segments.size(); ++s) {
    require(segment_paths.insert(segments[s].path).second, "/segments/" + std::to_string(s) + "/path",
            "segment '" + segments[s].path + "' is repeated");
  }
  std::set<std::string> closed;  // segments whose layers have ended
  std::string open;
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerDescription& l = *layers[i];
    const std::string pointer = "/layers/" + std::to_string(i);
    require(paths.insert(l.path).second, pointer + "/path", "layer '" + l.path + "' is repeated");
    require(l.segment.empty() || segment_paths.count(l.segment), pointer + "/segment", "'" + l.segment + "' is not in /segments");
    if (l.segment != open) {
      if (!open.empty()) closed.insert(open);
      require(!closed.count(l.segment), pointer + "/segment",
              "the layers of segment '" + l.segment + "' do not follow each other");
      open = l.segment;
    }
    for (const auto& s : l.saved) slots.insert(tensor_key(l.path, s.slot));
  }
  // Storage and output references may point forward (a slot saved later), so
  // they are checked once every slot is known.
  const std::string not_saved = "' is not a saved tensor of this " + noun;
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerDescription& l = *layers[i];
    const std::string pointer = "/layers/" + std::to_string(i);
    for (size_t k = 0; k < l.saved.size(); ++k) {
      const std::string saved = pointer + "/saved/" + std::to_string(k);
      require(slots.count(l.saved[k].storage), saved + "/storage", "'" + l.saved[k].storage + not_saved);
      require(l.saved[k].view.empty() || slots.count(l.saved[k].view), saved + "/view", "'" + l.saved[k].view + not_saved);
      const std::string& use = l.saved[k].last_forward_use;
      require(use.empty() || paths.count(use), saved + "/last_forward_use", "'" + use + "' is not a layer of this " + noun);
    }
    for (size_t k = 0; k < l.output_saved_by.size(); ++k) {
      require(slots.count(l.output_saved_by[k]), pointer + "/output_saved_by/" + std::to_string(k),
              "'" + l.output_saved_by[k] + not_saved);
    }
  }
  for (size_t s = 0; s < segments.size(); ++s) {
    const std::string pointer = "/segments/" + std::to_string(s);
    bool has_layers = false;
    for (const auto* l : layers) has_layers = has_layers || l->segment == segments[s].path;
    require(has_layers, pointer + "/path", "segment '" + segments[s].path + "' has no layers");
    const std::string& input = segments[s].input_storage;
    require(input.empty() || slots.count(input), pointer + "/input/storage", "'" + input + not_saved);
  }
}

}  // namespace papaya::model
