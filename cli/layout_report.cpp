// What plan and recommend show of a layout search: the best layouts, the
// best one's stages, and --emit's engine arguments.
#include <ostream>

#include "cli/layout_options.h"
#include "cli/table.h"
#include "model/error.h"
#include "cli/engine_arguments.h"
#include "model/units.h"

namespace papaya::cli {
namespace {

struct Laid {
  pipeline::LayoutPlanned planned;
  int gpus = 0;
  std::string emit, emitted;  // the engine, its arguments for the best layout
};

std::string seconds_text(double s) { return s >= 1 ? fixed(s, 2) + " s" : fixed(s * 1e3, 1) + " ms"; }
std::string percent(double f) { return fixed(100 * f, 1) + "%"; }

nlohmann::json stage_json(const model::StageEstimate& s) {
  return {{"first_block", s.span.first_block},
          {"end_block", s.span.end_block},
          {"peak_bytes", s.peak_bytes},
          {"peak_at", s.peak_at},
          {"static_bytes", s.static_bytes},
          {"activation_bytes", s.activation_bytes},
          {"in_flight", s.in_flight},
          {"micro_batch_s", s.micro_batch_seconds},
          {"tensor_comm_s", s.tensor_comm_seconds},
          {"pipeline_comm_s", s.pipeline_comm_seconds},
          {"context_comm_s", s.context_comm_seconds},
          {"expert_comm_s", s.expert_comm_seconds},
          {"data_comm_s", s.data_comm_seconds},
          {"optimizer_s", s.optimizer_seconds}};
}

nlohmann::json layout_json(const model::LayoutEstimate& e) {
  const model::ParallelLayout& l = e.layout;
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : e.stages) stages.push_back(stage_json(s));
  return {{"tensor", l.tensor},
          {"sequence", l.sequence},
          {"pipeline", l.pipeline},
          {"virtual_stages", l.virtual_stages},
          {"context", l.context},
          {"expert", l.expert},
          {"data", l.data},
          {"zero", l.zero_stage},
          {"offload_optimizer", l.offload_optimizer},
          {"micro_batch", l.micro_batch},
          {"micro_batches", l.micro_batches},
          {"global_batch", l.global_batch()},
          {"plan", e.plan},
          {"peak_bytes", e.peak_bytes},
          {"peak_stage", e.peak_stage},
          {"iteration_s", e.iteration_seconds},
          {"bubble_s", e.bubble_seconds},
          {"exposed_comm_s", e.exposed_comm_seconds},
          {"offload_s", e.offload_seconds},
          {"tokens_per_s", e.tokens_per_s},
          {"mfu", e.model_flops_utilization},
          {"stages", stages}};
}

void to_json(nlohmann::json& doc, const Laid& r) {
  const pipeline::LayoutPlanned& p = r.planned;
  nlohmann::json layouts = nlohmann::json::array();
  for (const auto& e : p.answer.best) layouts.push_back(layout_json(e));
  doc = {{"network", p.network},
         {"precision", p.precision},
         {"hardware", p.hardware},
         {"gpus", r.gpus},
         {"gpus_per_node", p.links.gpus_per_node},
         {"intra_node_link", p.links.intra_name},
         {"inter_node_link", p.links.inter_name},
         {"budget_bytes", p.budget_bytes},
         {"global_batch", p.global_batch},
         {"tokens", p.shape.tokens},
         {"layouts", layouts},
         {"priced", p.answer.priced},
         {"pruned", p.answer.pruned},
         {"notes", p.notes}};
  if (!r.emit.empty()) doc["emit"] = {{"engine", r.emit}, {"text", r.emitted}};
}

void print_text(std::ostream& out, const Laid& r) {
  if (!r.emit.empty()) {
    out << r.emitted;
    return;
  }
  const pipeline::LayoutPlanned& p = r.planned;
  out << "papaya: " << p.network << " (" << p.precision << ", " << p.shape.tokens << " tokens a sample) on " << r.gpus << " x "
      << p.hardware << ", " << p.links.gpus_per_node << " a node (" << p.links.intra_name << " within, " << p.links.inter_name
      << " between); budget " << model::format_bytes(p.budget_bytes) << " a GPU; global batch " << p.global_batch << "\n\n";
  Table table({"layout", "plan", "peak a GPU", "on stage", "iteration", "bubble", "exposed comm", "tokens/s", "MFU"});
  for (const auto& e : p.answer.best) {
    table.add_row({e.layout.label(), e.plan, model::format_bytes(e.peak_bytes), std::to_string(e.peak_stage),
                   seconds_text(e.iteration_seconds), seconds_text(e.bubble_seconds), seconds_text(e.exposed_comm_seconds),
                   per_second(e.tokens_per_s), e.model_flops_utilization > 0 ? percent(e.model_flops_utilization) : "-"});
  }
  table.print(out);
  out << "layout: t tensor-parallel (s: with sequence parallelism), p pipeline stages, v chunks a stage, c context-parallel, "
         "e expert-parallel, d data-parallel GPUs, z the ZeRO stage, mb micro-batch x micro-batches\n\n";
  const model::LayoutEstimate& best = p.answer.best.front();
  out << "best: " << best.layout.label() << " under " << best.plan << ", each pipeline stage:\n";
  Table stages({"stage", "blocks", "peak a GPU", "where", "weights+grads+optimizer", "a micro-batch holds", "in flight",
                "micro-batch", "TP comm", "PP comm"});
  for (size_t i = 0; i < best.stages.size(); ++i) {
    const auto& s = best.stages[i];
    stages.add_row({std::to_string(i), std::to_string(s.span.first_block) + "-" + std::to_string(s.span.end_block - 1),
                    model::format_bytes(s.peak_bytes), s.peak_at, model::format_bytes(s.static_bytes),
                    model::format_bytes(s.activation_bytes), fixed(s.in_flight, 2), seconds_text(s.micro_batch_seconds),
                    seconds_text(s.tensor_comm_seconds), seconds_text(s.pipeline_comm_seconds)});
  }
  stages.print(out);
  out << "searched: " << p.answer.priced << " layouts priced; " << p.answer.pruned
      << " pruned by their weights, gradients and optimizer state alone\n";
  for (const auto& note : p.notes) out << "note: " << note << "\n";
  out << "(--emit megatron or --emit torchtitan writes the best layout for those engines)\n";
}

}  // namespace

void show_layouts(const model::LayerModel& model, const LayoutOptions& options, const pipeline::LayoutPlanRequest& request,
                  const Output& output) {
  Laid r;
  r.gpus = request.question.gpus;
  r.planned = pipeline::plan_layouts(model, request);
  const model::LayoutAnswer& a = r.planned.answer;
  if (a.best.empty()) {
    const std::string budget = model::format_bytes(r.planned.budget_bytes);
    if (!a.nearest) {
      throw InputError("no layout of " + std::to_string(r.gpus) + " GPUs fits " + budget +
                       " a GPU: the weights, gradients and optimizer state alone pass it on every layout");
    }
    throw InputError("no layout of " + std::to_string(r.gpus) + " GPUs fits " + budget + " a GPU: the nearest, " +
                     a.nearest->layout.label() + " under " + a.nearest->plan + ", needs " +
                     model::format_bytes(a.nearest->peak_bytes) + " on pipeline stage " + std::to_string(a.nearest->peak_stage));
  }
  r.emit = options.emit;
  if (r.emit == "megatron") r.emitted = megatron_arguments(a.best.front(), r.planned.shape, r.planned.precision);
  if (r.emit == "torchtitan") r.emitted = torchtitan_config(a.best.front(), r.planned.shape, r.planned.precision);
  show(r, output);
}

}  // namespace papaya::cli
