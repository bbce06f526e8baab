#include "workflow/training/layout_file.h"

#include <fstream>

#include "model/catalog/transformer_shape.h"
#include "model/error.h"
#include "model/json_file.h"
#include "model/parallel/parallel_layout_json.h"

namespace papaya::workflow {
namespace {

// The best of a layout search's layouts, as the search priced it.
LayoutFile searched(const nlohmann::json& doc, const std::string& path) {
  model::validate_json(doc, "layout-search", path);
  const nlohmann::json& best = doc.at("layouts").front();
  LayoutFile out;
  out.layout = model::parallel_layout_from_json(best, path + ": /layouts/0");
  out.plan = best.at("plan");
  out.precision = doc.value("precision", "");
  out.network = doc.value("network", "");
  out.tokens = doc.value("tokens", 0);
  return out;
}

// A plan file's data-parallel GPUs (1 where it names none), each at its batch.
LayoutFile planned(const nlohmann::json& doc, const std::string& path) {
  model::validate_json(doc, "plan", path);
  const nlohmann::json predicted = doc.value("predicted", nlohmann::json::object());
  const int batch = doc.value("batch", predicted.value("batch", 0));
  if (batch < 1) throw InputError(path + ": /batch: the plan names no batch to train at");
  LayoutFile out;
  out.layout = model::ParallelLayout::data_parallel(predicted.value("gpus", 1), predicted.value("zero", 0));
  out.layout.micro_batch = batch;
  model::check_layout_in(out.layout, path + ": /predicted");
  out.plan = path;
  out.network = doc.value("network", "");
  return out;
}

}  // namespace

LayoutFile read_layout_file(const std::string& path) {
  const nlohmann::json doc = model::read_json_file(path, "layout");
  if (doc.is_object() && doc.contains("layouts")) return searched(doc, path);
  if (doc.is_object() && doc.contains("papaya_plan")) return planned(doc, path);
  throw InputError(path + ": neither the JSON of a layout search (with \"layouts\") nor a plan file (\"papaya_plan\")");
}

int gpus_planned_for(const std::string& plan) {
  std::ifstream in(plan);
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("predicted") || !doc["predicted"].is_object()) return 1;
  const nlohmann::json& gpus = doc["predicted"].value("gpus", nlohmann::json(1));
  return gpus.is_number_integer() ? gpus.get<int>() : 1;
}

void check_made_for(const LayoutFile& file, const model::NetworkConfig& network, const std::string& path) {
  if (!file.network.empty() && file.network != network.name) {
    throw InputError(path + ": the layout was made for " + file.network + ", not " + network.name);
  }
  if (file.tokens == 0) return;
  const int tokens = model::transformer_shape(network).tokens;
  if (tokens != file.tokens) {
    throw InputError(path + ": the layout was priced at " + std::to_string(file.tokens) + " tokens a sample, not " +
                     std::to_string(tokens));
  }
}

}  // namespace papaya::workflow
