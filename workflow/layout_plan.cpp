#include "workflow/layout_plan.h"

#include <algorithm>

#include "model/catalog/hardware.h"
#include "model/catalog/link_catalog.h"
#include "model/catalog/target.h"
#include "model/error.h"
#include "model/parallel/tensor_split.h"
#include "model/plan.h"
#include "model/plan_space/predict.h"
#include "model/strategy_table.h"

namespace papaya::workflow {

namespace {

// The links within a node and between nodes; notes what was assumed.
model::ClusterLinks cluster_links(const model::LayerModel& model, const ParallelRequest& request, const model::Target& target,
                                  std::vector<std::string>& notes) {
  const int gpus_per_node = request.gpus_per_node.value_or(8);
  if (gpus_per_node < 1) throw InputError(std::to_string(gpus_per_node) + " GPUs a node: at least 1");
  const std::string intra = request.link_within_node(request.hardware.empty() ? model::catalog_entry_for(model.machine)
                                                                              : model::find_hardware(request.hardware));
  if (intra.empty()) {
    throw InputError(target.name + " has no interconnect known: name the link within a node (" + model::link_names() + ")");
  }
  const std::string inter = request.link_between_nodes(intra);
  const model::LinkSpec intra_spec = model::load_link(intra), inter_spec = model::load_link(inter);
  if (request.inter_node_link.empty()) notes.push_back(inter_node_assumed(inter_spec.name));
  return {gpus_per_node, intra_spec.name, inter_spec.name, intra_spec.fit, inter_spec.fit};
}

LayoutSetting setting_of(const model::LayerModel& model, const ParallelRequest& request, const model::Target& target) {
  LayoutSetting s;
  s.network = model.network;
  s.precision = model.precision;
  s.hardware = target.name;
  s.notes = target.notes;
  s.links = cluster_links(model, request, target, s.notes);
  if (!request.overlap_grad_reduce) {
    s.notes.push_back("data-parallel gradients reduced after backward, in one all-reduce: exposed whole");
  }
  if (model::engine_limits(request.engine).holding == model::StateHolding::megatron && model.precision != "fp32") {
    s.notes.push_back(
        "static memory as Megatron-LM holds it: half-precision weights, fp32 main gradients, 12 bytes of optimizer "
        "state a parameter (its distributed optimizer shards them), no weight copies to compute with");
  }
  return s;
}

// plan_layouts' answer before its search: the setting and the budget; the
// budget and the plans to weigh filled into the request's question.
LayoutPlanned prepared(const model::LayerModel& model, ParallelRequest& request) {
  LayoutPlanned out;
  const model::Target target = model::make_target(model, request.hardware, request.compute_efficiency, request.engine);
  out.setting = setting_of(model, request, target);

  out.budget_bytes = request.budget_bytes.value_or(model::default_budget(target));
  target.check_budget(out.budget_bytes);
  model::LayoutQuestion& q = request.question;
  q.budget_bytes = out.budget_bytes;
  if (q.plans.empty()) {
    // The search takes the first plan that fits, in the order they add to
    // keep's time: the attention cores' forward again is the least.
    q.plans = model::plan_names(model, target);
    const auto selective = std::find(q.plans.begin(), q.plans.end(), model::recompute_attention_term);
    if (selective != q.plans.end()) std::rotate(q.plans.begin() + 1, selective, selective + 1);
  } else if (!model::has_attention_cores(model.layout())) {
    // Weighed among others (an engine's plans), recompute-attention is no
    // choice where attention holds no probabilities; alone it is refused.
    const auto selective = [](const std::string& plan) {
      return plan.find(model::recompute_attention_term) != std::string::npos;
    };
    const size_t before = q.plans.size();
    std::vector<std::string> plans = q.plans;
    plans.erase(std::remove_if(plans.begin(), plans.end(), selective), plans.end());
    if (!plans.empty() && plans.size() < before) {
      q.plans = plans;
      out.setting.notes.push_back(std::string(model::recompute_attention_term) +
                                  " left out: the network's attention is fused and keeps no probabilities to recompute");
    }
  }
  return out;
}

model::LayoutPricer pricer_for(const model::LayerModel& model, const ParallelRequest& request, const LayoutSetting& setting) {
  model::LayoutRequest priced{request.hardware, setting.links, request.compute_efficiency, request.engine};
  priced.overlap_grad_reduce = request.overlap_grad_reduce;
  return model::LayoutPricer(model, priced);
}

// The search of a prepared request.
LayoutPlanned searched(const model::LayoutPricer& pricer, LayoutPlanned out, ParallelRequest request) {
  out.setting.shape = pricer.shape();
  model::LayoutQuestion& q = request.question;
  if (q.global_batch == 0) q.global_batch = model::default_global_batch(out.setting.shape.tokens, q.gpus);
  out.global_batch = q.global_batch;
  out.answer = model::search_layouts(pricer, q, request.keep);
  return out;
}

}  // namespace

LayoutPlanned plan_layouts(const model::LayerModel& model, ParallelRequest request) {
  LayoutPlanned out = prepared(model, request);
  return searched(pricer_for(model, request, out.setting), std::move(out), request);
}

FewestGpus fewest_gpus_that_fit(const model::LayerModel& model, ParallelRequest request, Reporter& reporter, int most) {
  model::transformer_shape(model, model.network);  // a network without blocks to split is no question of GPUs
  request.keep = 1;
  const LayoutPlanned setting = prepared(model, request);
  // One pricer for every count: the stages of one split, priced once.
  const model::LayoutPricer pricer = pricer_for(model, request, setting.setting);
  int counts = 0;  // the doublings up to `most`, for the progress shown
  for (int gpus = 1; gpus <= most; gpus *= 2) ++counts;
  const auto fewest = [&](ParallelRequest r, int from, const std::string& what) -> std::optional<LayoutPlanned> {
    reporter.begin(setting.setting.hardware + what);
    int done = 0;
    for (int gpus = 1; gpus <= most; gpus *= 2, ++done) {
      if (gpus < from) continue;
      reporter.update(done, counts, std::to_string(gpus) + (gpus == 1 ? " GPU" : " GPUs"));
      r.question.gpus = gpus;
      r.question.global_batch = 0;
      try {
        LayoutPlanned planned = searched(pricer, setting, r);
        if (!planned.answer.best.empty()) return planned;
      } catch (const InputError&) {  // no layout of this many GPUs splits the network
      }
    }
    return std::nullopt;
  };
  FewestGpus out;
  out.planned = fewest(request, 1, "");
  if (out.planned && out.planned->answer.best.front().layout.offload_optimizer) {
    // Fewer GPUs than with the optimizer's place left open cannot fit.
    request.question.offload_optimizer = false;
    out.on_device = fewest(request, out.planned->answer.best.front().layout.gpus(), " without offloading");
  }
  reporter.end();
  return out;
}

LayoutPredicted predict_layout(const model::LayerModel& model, const ParallelRequest& request,
                               const model::ParallelLayout& layout, std::vector<std::string> plans) {
  LayoutPredicted out;
  const model::Target target = model::make_target(model, request.hardware, request.compute_efficiency, request.engine);
  out.setting = setting_of(model, request, target);
  const model::LayoutPricer pricer = pricer_for(model, request, out.setting);
  out.setting.shape = pricer.shape();
  if (plans.empty()) plans = model::plan_names(model, target);
  for (const std::string& plan : plans) out.estimates.push_back(pricer.estimate(layout, plan));
  return out;
}

}  // namespace papaya::workflow
