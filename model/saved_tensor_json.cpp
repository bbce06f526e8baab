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
          {"storage_bytes_per_sample", t.storage_bytes_per_sample}};
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
  return t;
}

}  // namespace papaya::model
