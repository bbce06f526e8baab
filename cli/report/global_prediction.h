#pragma once
// What predict and limits show for a global model (papaya fit --measurements
// --out): per series, the figures at --batch (predict only), the largest
// batch under the budget with samples/s there, the best batch and the
// verdict; a table per GPU, or one JSON array.
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "model/fit/global_predict.h"

namespace papaya::cli {

struct GlobalPredictionReport {
  std::string command;  // "predict" or "limits"
  std::string model;    // the file
  model::GlobalPrediction prediction;
};

void to_json(nlohmann::json& out, const GlobalPredictionReport& report);
void print_text(std::ostream& out, const GlobalPredictionReport& report);

}  // namespace papaya::cli
