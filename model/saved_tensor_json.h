#pragma once
// The JSON form of a saved tensor's description, shared by the documents
// that carry one (profiles, layer models).
#include <nlohmann/json.hpp>
#include <string>

#include "model/profile.h"

namespace papaya::model {

nlohmann::json saved_tensor_to_json(const SavedTensorProfile& t);
// `doc` has been validated against the document's schema.
SavedTensorProfile saved_tensor_from_json(const nlohmann::json& doc);

}  // namespace papaya::model
