#include "workflow/parallel_request.h"

#include "model/catalog/hardware.h"
#include "model/catalog/link_catalog.h"
#include "model/error.h"

namespace papaya::workflow {

bool ParallelRequest::data_parallel_only() const {
  const model::LayoutQuestion& q = question;
  for (const auto& degree : {q.tensor, q.pipeline, q.virtual_stages, q.context, q.expert}) {
    if (degree != 1) return false;
  }
  return !q.micro_batch && q.global_batch == 0 && !q.offload_optimizer.value_or(false) && overlap_grad_reduce &&
         !compute_efficiency && !engine_arguments && q.plans.empty();
}

model::ParallelLayout ParallelRequest::data_parallel_layout(int zero_stage) const {
  return model::ParallelLayout::data_parallel(gpus(), zero_stage);
}

void ParallelRequest::validate() const {
  model::check_layout(data_parallel_layout(question.zero_stage.value_or(0)));
  if (gpus() > 1) {
    if (!intra_node_link.empty()) model::load_link(intra_node_link);
    return;
  }
  if (!intra_node_link.empty()) throw InputError("link " + intra_node_link + " joins GPUs: it needs 2 GPUs or more");
}

void ParallelRequest::require_link(const std::string& where) const {
  if (gpus() < 2 || !intra_node_link.empty()) return;
  throw InputError(std::to_string(gpus()) + " GPUs on " + where + ": no interconnect known; name a link (" + model::link_names() +
                   ", or a measured link's file)");
}

std::vector<int> ParallelRequest::zero_stages(bool planner_chooses) const {
  if (question.zero_stage) return {*question.zero_stage};
  if (planner_chooses && gpus() > 1) return {0, 1, 2, 3};
  return {0};
}

std::string ParallelRequest::link_within_node(const std::optional<model::HardwareSpec>& hardware) const {
  if (!intra_node_link.empty()) return intra_node_link;
  return hardware ? hardware->interconnect : "";
}

std::string ParallelRequest::link_between_nodes(const std::string& within) const {
  return inter_node_link.empty() ? inter_node_default(within) : inter_node_link;
}

std::string inter_node_default(const std::string& interconnect) {
  return interconnect == "NVLink-3" ? "InfiniBand-HDR" : "InfiniBand-NDR";
}

std::string inter_node_assumed(const std::string& link) {
  return "between nodes: " + link + " assumed (one port a GPU); name another with the option for the link between nodes";
}

void apply_data_parallel(model::Target& target, const model::LayerModel& model, const ParallelRequest& request, int zero_stage) {
  if (request.gpus() < 2) return;
  std::string link =
      request.link_within_node(target.profiled ? model::catalog_entry_for(model.machine) : model::find_hardware(target.name));
  if (link.empty()) request.require_link(target.name);
  const int gpus_per_node = request.gpus_per_node.value_or(8);
  if (request.gpus() > gpus_per_node) {
    link = request.link_between_nodes(link);
    if (request.inter_node_link.empty()) {
      target.notes.push_back(std::to_string(request.gpus()) + " GPUs are more than a node of " + std::to_string(gpus_per_node) +
                             ": their gradients cross nodes; " + inter_node_assumed(link));
    }
  }
  const model::LinkSpec spec = model::load_link(link);
  model::set_data_parallel(target, model::data_parallel_of(request.data_parallel_layout(zero_stage), spec.name, spec.fit));
}

}  // namespace papaya::workflow
