#pragma once
// The global model as a JSON document (configs/schemas/model-global.schema.json):
//   {"papaya_model": 1, "kind": "global", "source": ..., "budget_bytes": ...,
//    "series": [{gpu, network, precision, strategy, points, alpha_bytes_per_sample,
//                beta_bytes, memory_floor_bytes, gamma_s_per_sample, delta_s, a_s, k_s_per_sample, c_s,
//                r2_*, max_batch, best_samples_per_s, helps, ...}]}
// Bytes and seconds throughout; null where a part was not fitted.
#include <nlohmann/json.hpp>
#include <string>

#include "model/fit/global_fit.h"

namespace papaya::model {

nlohmann::json to_json(const SeriesFit& fit);
nlohmann::json to_json(const GlobalModel& model);

// Reads and validates a document written from to_json; InputError naming the
// file and JSON path otherwise.
GlobalModel load_global_model(const std::string& path);

// Whether the model file at `path` is a global model (its /kind), so that a
// command taking either kind reads it with the right loader.
bool is_global_model_file(const std::string& path);

}  // namespace papaya::model
