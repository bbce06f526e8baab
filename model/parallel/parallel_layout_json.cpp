#include "model/parallel/parallel_layout_json.h"

#include "model/json_file.h"

namespace papaya::model {

nlohmann::json parallel_layout_json(const ParallelLayout& l) {
  return {{"label", l.label()},
          {"tensor", l.tensor},
          {"sequence", l.sequence},
          {"pipeline", l.pipeline},
          {"virtual_stages", l.virtual_stages},
          {"context", l.context},
          {"expert", l.expert},
          {"data", l.data},
          {"zero", l.zero_stage},
          {"offload_optimizer", l.offload_optimizer},
          {"micro_batch", l.micro_batch},
          {"micro_batches", l.micro_batches}};
}

ParallelLayout parallel_layout_from_json(const nlohmann::json& doc, const std::string& label) {
  validate_json(doc, "layout", label);
  ParallelLayout l;
  l.tensor = doc.at("tensor");
  l.sequence = doc.at("sequence");
  l.pipeline = doc.at("pipeline");
  l.virtual_stages = doc.at("virtual_stages");
  l.context = doc.at("context");
  l.expert = doc.at("expert");
  l.data = doc.at("data");
  l.zero_stage = doc.at("zero");
  l.offload_optimizer = doc.at("offload_optimizer");
  l.micro_batch = doc.at("micro_batch");
  l.micro_batches = doc.at("micro_batches");
  check_layout_in(l, label);
  return l;
}

}  // namespace papaya::model
