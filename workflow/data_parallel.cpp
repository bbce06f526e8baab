#include "workflow/data_parallel.h"

#include "model/catalog/hardware.h"
#include "model/catalog/link_catalog.h"
#include "model/error.h"

namespace papaya::workflow {

model::ParallelLayout DataParallelRequest::layout(int zero_stage) const {
  return model::ParallelLayout::data_parallel(gpus, zero_stage);
}

void DataParallelRequest::validate() const {
  model::check_layout(layout(zero.value_or(0)));
  if (gpus > 1) {
    if (!link.empty()) model::load_link(link);
    return;
  }
  if (!link.empty()) throw InputError("link " + link + " joins GPUs: it needs 2 GPUs or more");
}

void DataParallelRequest::require_link(const std::string& where) const {
  if (gpus < 2 || !link.empty()) return;
  throw InputError(std::to_string(gpus) + " GPUs on " + where + ": no interconnect known; name a link (" + model::link_names() +
                   ", or a measured link's file)");
}

std::vector<int> DataParallelRequest::stages(bool planner_chooses) const {
  if (zero) return {*zero};
  if (planner_chooses && gpus > 1) return {0, 1, 2, 3};
  return {0};
}

void apply_data_parallel(model::Target& target, const model::LayerModel& model, const DataParallelRequest& request,
                         int zero_stage) {
  if (request.gpus < 2) return;
  std::string link = request.link;
  if (link.empty()) {
    const auto hardware = target.profiled ? model::catalog_entry_for(model.machine) : model::find_hardware(target.name);
    if (!hardware) request.require_link(target.name);
    link = hardware->interconnect;
  }
  const model::LinkSpec spec = model::load_link(link);
  model::set_data_parallel(target, model::data_parallel_of(request.layout(zero_stage), spec.name, spec.fit));
}

}  // namespace papaya::workflow
