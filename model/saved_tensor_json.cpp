#include "model/saved_tensor_json.h"

namespace papaya::model {

nlohmann::json saved_tensor_to_json(const SavedTensorProfile& t) {
  return {{"slot", t.slot},
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
  return t;
}

nlohmann::json codec_to_json(const CodecMeasurement& c) {
  return {{"bits", c.bits},
          {"pack_bytes_per_s", c.pack_bytes_per_s},
          {"unpack_bytes_per_s", c.unpack_bytes_per_s},
          {"pack_seconds_per_call", c.pack_seconds_per_call},
          {"unpack_seconds_per_call", c.unpack_seconds_per_call},
          {"pack_scratch_per_byte", c.pack_scratch_per_byte},
          {"pack_scratch_max", c.pack_scratch_max},
          {"unpack_scratch_per_byte", c.unpack_scratch_per_byte},
          {"unpack_scratch_max", c.unpack_scratch_max}};
}

CodecMeasurement codec_from_json(const nlohmann::json& doc) {
  CodecMeasurement c;
  c.bits = doc.at("bits");
  c.pack_bytes_per_s = doc.at("pack_bytes_per_s");
  c.unpack_bytes_per_s = doc.at("unpack_bytes_per_s");
  c.pack_seconds_per_call = doc.value("pack_seconds_per_call", 0.0);
  c.unpack_seconds_per_call = doc.value("unpack_seconds_per_call", 0.0);
  c.pack_scratch_per_byte = doc.value("pack_scratch_per_byte", 0.0);
  c.pack_scratch_max = doc.value("pack_scratch_max", 0.0);
  c.unpack_scratch_per_byte = doc.value("unpack_scratch_per_byte", 0.0);
  c.unpack_scratch_max = doc.value("unpack_scratch_max", 0.0);
  return c;
}

nlohmann::json inverts_to_json(const std::vector<InvertMeasurement>& inverts) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& i : inverts) {
    out.push_back({{"kind", to_string(i.kind)},
                   {"from_output_bytes_per_s", i.from_output_bytes_per_s},
                   {"native_bytes_per_s", i.native_bytes_per_s}});
  }
  return out;
}

std::vector<InvertMeasurement> inverts_from_json(const nlohmann::json& doc) {
  std::vector<InvertMeasurement> out;
  if (!doc.contains("inverts")) return out;
  for (const auto& i : doc.at("inverts")) {
    out.push_back(
        {layer_kind_from_string(i.at("kind"), "/inverts"), i.at("from_output_bytes_per_s"), i.at("native_bytes_per_s")});
  }
  return out;
}

}  // namespace papaya::model
