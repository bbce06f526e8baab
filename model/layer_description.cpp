#include "model/layer_description.h"

#include "model/saved_tensor_json.h"

namespace papaya::model {

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
  out["parameter_copy_bytes"] = l.parameter_copy_bytes;
  out["forward_flops_per_sample"] = l.forward_flops_per_sample;
  out["forward_bytes_moved_per_sample"] = l.forward_bytes_moved_per_sample;
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
  l.parameter_copy_bytes = doc.value("parameter_copy_bytes", int64_t{0});
  l.forward_flops_per_sample = doc.at("forward_flops_per_sample");
  l.forward_bytes_moved_per_sample = doc.at("forward_bytes_moved_per_sample");
  return l;
}

}  // namespace papaya::model
