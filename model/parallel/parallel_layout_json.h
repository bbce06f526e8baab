#pragma once
// A ParallelLayout as JSON (configs/schemas/layout.schema.json): what plan
// and recommend write of each layout they price, and what a trainer reads
// back to run one.
#include <nlohmann/json.hpp>
#include <string>

#include "model/parallel/parallel_layout.h"

namespace papaya::model {

// Its degrees, ZeRO stage, offload and micro-batching, and its label.
nlohmann::json parallel_layout_json(const ParallelLayout& layout);

// The layout `doc` describes (other keys are passed by), checked by
// check_layout without a network. InputError "<label>: <json path>: <what
// was expected>", or "<label>: layout: <the rule it breaks>".
ParallelLayout parallel_layout_from_json(const nlohmann::json& doc, const std::string& label);

}  // namespace papaya::model
