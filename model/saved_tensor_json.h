#pragma once
// The JSON forms shared by the documents that carry them (profiles, layer
// models): a saved tensor's description, a codec measurement and the
// inverted activations' backward rates.
#include <nlohmann/json.hpp>
#include <string>

#include "model/profile.h"

namespace papaya::model {

nlohmann::json saved_tensor_to_json(const SavedTensorProfile& t);
// `doc` has been validated against the document's schema.
SavedTensorProfile saved_tensor_from_json(const nlohmann::json& doc);

nlohmann::json codec_to_json(const CodecMeasurement& c);
CodecMeasurement codec_from_json(const nlohmann::json& doc);  // scratch figures default to 0

// The "inverts" array of either document; absent (older files): none.
nlohmann::json inverts_to_json(const std::vector<InvertMeasurement>& inverts);
std::vector<InvertMeasurement> inverts_from_json(const nlohmann::json& doc);

}  // namespace papaya::model
