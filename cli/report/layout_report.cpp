#include "cli/report/layout_report.h"

#include <ostream>
#include <utility>

#include "cli/report/engine_arguments.h"
#include "cli/report/html_report.h"
#include "cli/report/table.h"
#include "model/error.h"
#include "model/parallel/parallel_layout_json.h"
#include "model/units.h"

namespace papaya::cli {
namespace {

struct Laid {
  workflow::LayoutPlanned planned;
  int gpus = 0;
  std::string model_path;     // where the model was written ("": not)
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
          {"weight_copies_bytes", s.weight_copies_bytes},
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
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : e.stages) stages.push_back(stage_json(s));
  nlohmann::json doc = model::parallel_layout_json(e.layout);
  doc.update({{"global_batch", e.layout.global_batch()},
              {"plan", e.plan},
              {"peak_bytes", e.peak_bytes},
              {"peak_stage", e.peak_stage},
              {"iteration_s", e.iteration_seconds},
              {"bubble_s", e.bubble_seconds},
              {"exposed_comm_s", e.exposed_comm_seconds},
              {"offload_s", e.offload_seconds},
              {"tokens_per_s", e.tokens_per_s},
              {"mfu", e.model_flops_utilization},
              {"stages", stages}});
  return doc;
}

nlohmann::json setting_json(const workflow::LayoutSetting& s, int gpus) {
  return {{"network", s.network},
          {"precision", s.precision},
          {"hardware", s.hardware},
          {"gpus", gpus},
          {"gpus_per_node", s.links.gpus_per_node},
          {"intra_node_link", s.links.intra_name},
          {"inter_node_link", s.links.inter_name},
          {"tokens", s.shape.tokens},
          {"notes", s.notes}};
}

void to_json(nlohmann::json& doc, const Laid& r) {
  const workflow::LayoutPlanned& p = r.planned;
  nlohmann::json layouts = nlohmann::json::array();
  for (const auto& e : p.answer.best) layouts.push_back(layout_json(e));
  doc = setting_json(p.setting, r.gpus);
  doc.update({{"budget_bytes", p.budget_bytes},
              {"global_batch", p.global_batch},
              {"layouts", layouts},
              {"why", p.answer.why},
              {"priced", p.answer.priced},
              {"pruned", p.answer.pruned},
              {"skipped", p.answer.skipped}});
  if (!r.emit.empty()) doc["emit"] = {{"engine", r.emit}, {"text", r.emitted}};
  if (!r.model_path.empty()) doc["model"] = r.model_path;
}

void print_stages(std::ostream& out, const model::LayoutEstimate& e) {
  Table stages({"stage", "blocks", "peak a GPU", "where", "weights+grads+optimizer", "a micro-batch holds", "in flight",
                "micro-batch", "TP comm", "PP comm"});
  for (size_t i = 0; i < e.stages.size(); ++i) {
    const auto& s = e.stages[i];
    stages.add_row({std::to_string(i), std::to_string(s.span.first_block) + "-" + std::to_string(s.span.end_block - 1),
                    model::format_bytes(s.peak_bytes), s.peak_at, model::format_bytes(s.static_bytes),
                    model::format_bytes(s.activation_bytes), fixed(s.in_flight, 2), seconds_text(s.micro_batch_seconds),
                    seconds_text(s.tensor_comm_seconds), seconds_text(s.pipeline_comm_seconds)});
  }
  stages.print(out);
}

std::vector<std::string> summary_cells(const model::LayoutEstimate& e) {
  return {model::format_bytes(e.peak_bytes),
          std::to_string(e.peak_stage),
          seconds_text(e.iteration_seconds),
          seconds_text(e.bubble_seconds),
          seconds_text(e.exposed_comm_seconds),
          per_second(e.tokens_per_s),
          e.model_flops_utilization > 0 ? percent(e.model_flops_utilization) : "-"};
}

const std::vector<std::string> summary_header{"peak a GPU", "on stage", "iteration", "bubble", "exposed comm", "tokens/s", "MFU"};

std::string setting_text(const workflow::LayoutSetting& s, int gpus) {
  return s.network + " (" + s.precision + ", " + std::to_string(s.shape.tokens) + " tokens a sample) on " + std::to_string(gpus) +
         " x " + s.hardware + ", " + std::to_string(s.links.gpus_per_node) + " a node (" + s.links.intra_name + " within, " +
         s.links.inter_name + " between)";
}

const char* layout_legend =
    "layout: t tensor-parallel (s: with sequence parallelism), p pipeline stages, v chunks a stage, c context-parallel, "
    "e expert-parallel, d data-parallel GPUs, z the ZeRO stage, mb micro-batch x micro-batches\n";

void print_text(std::ostream& out, const Laid& r) {
  if (!r.emit.empty()) {
    out << r.emitted;
    return;
  }
  const workflow::LayoutPlanned& p = r.planned;
  out << "papaya: " << setting_text(p.setting, r.gpus) << "; budget " << model::format_bytes(p.budget_bytes)
      << " a GPU; global batch " << p.global_batch << "\n\n";
  std::vector<std::string> header{"layout", "plan"};
  header.insert(header.end(), summary_header.begin(), summary_header.end());
  Table table(header);
  for (const auto& e : p.answer.best) {
    std::vector<std::string> row{e.layout.label(), e.plan};
    for (auto& cell : summary_cells(e)) row.push_back(cell);
    table.add_row(row);
  }
  table.print(out);
  out << layout_legend << "\n";
  const model::LayoutEstimate& best = p.answer.best.front();
  out << "best: " << best.layout.label() << " under " << best.plan << " (" << p.answer.why << "), each pipeline stage:\n";
  print_stages(out, best);
  out << "searched: " << p.answer.priced << " layouts priced; " << p.answer.pruned
      << " pruned by their weights, gradients and optimizer state alone";
  if (p.answer.skipped > 0) out << "; " << p.answer.skipped << " micro-batch choices skipped, too slow at their least";
  out << "\n";
  for (const auto& note : p.setting.notes) out << "note: " << note << "\n";
  out << "(--emit megatron, torchtitan or papaya writes the best layout for that engine)\n";
  if (!r.model_path.empty()) {
    out << "model written to " << r.model_path << " (papaya predict " << r.model_path
        << " --batch MICRO-BATCH --gpus N --tp T ... prices one layout)\n";
  }
}

struct LayoutPrediction {
  workflow::LayoutPredicted predicted;
  int gpus = 0;
  std::string emit, emitted;
};

void to_json(nlohmann::json& doc, const LayoutPrediction& r) {
  const workflow::LayoutPredicted& p = r.predicted;
  nlohmann::json plans = nlohmann::json::array();
  for (const auto& e : p.estimates) plans.push_back(layout_json(e));
  doc = setting_json(p.setting, r.gpus);
  doc["plans"] = plans;
  if (!r.emit.empty()) doc["emit"] = {{"engine", r.emit}, {"text", r.emitted}};
}

void print_text(std::ostream& out, const LayoutPrediction& r) {
  if (!r.emit.empty()) {
    out << r.emitted;
    return;
  }
  const workflow::LayoutPredicted& p = r.predicted;
  const model::LayoutEstimate& first = p.estimates.front();
  out << "papaya predict: " << setting_text(p.setting, r.gpus) << " as " << first.layout.label() << "\n\n";
  std::vector<std::string> header{"plan"};
  header.insert(header.end(), summary_header.begin(), summary_header.end());
  Table table(header);
  for (const auto& e : p.estimates) {
    std::vector<std::string> row{e.plan};
    for (auto& cell : summary_cells(e)) row.push_back(cell);
    table.add_row(row);
  }
  table.print(out);
  out << layout_legend << "\n" << first.plan << ", each pipeline stage:\n";
  print_stages(out, first);
  for (const auto& note : p.setting.notes) out << "note: " << note << "\n";
}

// What training on --tokens takes on one hardware's best layout.
struct TrainingRun {
  double seconds = 0;
  std::optional<double> usd;  // where its GPU-hour has a price
};

// The best layout on each of several GPUs.
struct LayoutLimits {
  int gpus = 0;
  std::vector<workflow::LayoutPlanned> planned;  // one a hardware entry
  TrainingQuestion training;
  std::vector<std::optional<TrainingRun>> runs;  // with --tokens, one a hardware entry where a layout fits
  std::optional<size_t> fastest, cheapest;       // indices into planned
  std::string html;                              // where the page is written ("": none)
};

void price_training(LayoutLimits& r) {
  r.runs.assign(r.planned.size(), std::nullopt);
  if (!r.training.tokens) return;
  for (size_t i = 0; i < r.planned.size(); ++i) {
    const model::LayoutAnswer& a = r.planned[i].answer;
    if (a.best.empty() || a.best.front().tokens_per_s <= 0) continue;
    TrainingRun run{*r.training.tokens / a.best.front().tokens_per_s, std::nullopt};
    const auto price = r.training.usd_per_gpu_hour.find(r.planned[i].setting.hardware);
    if (price != r.training.usd_per_gpu_hour.end()) run.usd = price->second * r.gpus * run.seconds / 3600;
    r.runs[i] = run;
    if (!r.fastest || run.seconds < r.runs[*r.fastest]->seconds) r.fastest = i;
    if (run.usd && (!r.cheapest || *run.usd < *r.runs[*r.cheapest]->usd)) r.cheapest = i;
  }
}

void to_json(nlohmann::json& doc, const LayoutLimits& r) {
  doc = nlohmann::json::array();
  for (size_t i = 0; i < r.planned.size(); ++i) {
    const workflow::LayoutPlanned& p = r.planned[i];
    nlohmann::json entry = setting_json(p.setting, r.gpus);
    entry.update({{"budget_bytes", p.budget_bytes},
                  {"global_batch", p.global_batch},
                  {"best", p.answer.best.empty() ? nlohmann::json() : layout_json(p.answer.best.front())},
                  {"why", p.answer.why},
                  {"nearest_peak_bytes", p.answer.nearest ? nlohmann::json(p.answer.nearest->peak_bytes) : nlohmann::json()}});
    if (r.training.tokens) {
      const auto price = r.training.usd_per_gpu_hour.find(p.setting.hardware);
      entry["training"] = {
          {"tokens", *r.training.tokens},
          {"usd_per_gpu_hour", price != r.training.usd_per_gpu_hour.end() ? nlohmann::json(price->second) : nlohmann::json()},
          {"seconds", r.runs[i] ? nlohmann::json(r.runs[i]->seconds) : nlohmann::json()},
          {"cost_usd", r.runs[i] && r.runs[i]->usd ? nlohmann::json(*r.runs[i]->usd) : nlohmann::json()},
          {"fastest", r.fastest == i},
          {"cheapest", r.cheapest == i}};
    }
    doc.push_back(entry);
  }
}

// "H100-SXM-80GB: 3.2 days, $12,345 (t2s p1 d4 under keep)".
std::string run_text(const LayoutLimits& r, size_t i) {
  const TrainingRun& run = *r.runs[i];
  const model::LayoutEstimate& e = r.planned[i].answer.best.front();
  return r.planned[i].setting.hardware + ": " + duration_text(run.seconds) + (run.usd ? ", " + usd_text(*run.usd) : "") + " (" +
         e.layout.label() + " under " + e.plan + ")";
}

std::string limits_headline(const LayoutLimits& r) {
  const workflow::LayoutSetting& first = r.planned.front().setting;
  return "papaya limits: " + first.network + " (" + first.precision + ", " + std::to_string(first.shape.tokens) +
         " tokens a sample) on " + std::to_string(r.gpus) + " GPUs, " + std::to_string(first.links.gpus_per_node) +
         " a node; global batch " + std::to_string(r.planned.front().global_batch) + "; the best layout on each";
}

// The table of the best layouts, a row a hardware entry: its header and rows.
std::pair<std::vector<std::string>, std::vector<std::vector<std::string>>> limits_table(const LayoutLimits& r) {
  const bool priced = !r.training.usd_per_gpu_hour.empty();
  std::vector<std::string> header{"hardware", "budget", "layout", "plan"};
  header.insert(header.end(), summary_header.begin(), summary_header.end());
  if (r.training.tokens) header.push_back("time for " + count_text(*r.training.tokens) + " tokens");
  if (priced) header.push_back("cost");
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < r.planned.size(); ++i) {
    const workflow::LayoutPlanned& p = r.planned[i];
    std::vector<std::string> row{p.setting.hardware, model::format_bytes(p.budget_bytes)};
    if (p.answer.best.empty()) {
      row.push_back("none fits");
      row.push_back(p.answer.nearest ? "the nearest needs " + model::format_bytes(p.answer.nearest->peak_bytes) : "-");
      for (size_t k = 0; k < summary_header.size(); ++k) row.push_back("-");
    } else {
      const model::LayoutEstimate& e = p.answer.best.front();
      row.push_back(e.layout.label());
      row.push_back(e.plan);
      for (auto& cell : summary_cells(e)) row.push_back(cell);
    }
    if (r.training.tokens) row.push_back(r.runs[i] ? duration_text(r.runs[i]->seconds) : "-");
    if (priced) row.push_back(r.runs[i] && r.runs[i]->usd ? usd_text(*r.runs[i]->usd) : "-");
    rows.push_back(row);
  }
  return {header, rows};
}

// The lines under the table: the fastest, the cheapest, what a cost counts.
std::vector<std::string> limits_verdicts(const LayoutLimits& r) {
  std::vector<std::string> lines;
  if (r.fastest) lines.push_back("fastest: " + run_text(r, *r.fastest));
  if (r.cheapest) lines.push_back("cheapest: " + run_text(r, *r.cheapest));
  if (r.training.tokens && !r.training.usd_per_gpu_hour.empty()) {
    lines.push_back("cost: the GPU-hour's price x " + std::to_string(r.gpus) +
                    " GPUs x the hours; the GPUs' own time alone (no start-up, checkpoints or failures)");
  }
  return lines;
}

void print_text(std::ostream& out, const LayoutLimits& r) {
  out << limits_headline(r) << "\n\n";
  const auto [header, rows] = limits_table(r);
  Table table(header);
  for (const auto& row : rows) table.add_row(row);
  table.print(out);
  out << layout_legend;
  for (const auto& line : limits_verdicts(r)) out << line << "\n";
  for (const auto& note : r.planned.front().setting.notes) out << "note: " << note << "\n";
  if (!r.html.empty()) out << "report written to " << r.html << "\n";
}

// --html: tokens/s on each hardware entry's best layout, the time and cost
// of --tokens where asked, as bars; the table and the verdicts below.
void write_limits_page(const LayoutLimits& r) {
  nlohmann::json labels = nlohmann::json::array(), tokens = nlohmann::json::array(), hours = nlohmann::json::array(),
                 cost = nlohmann::json::array();
  for (size_t i = 0; i < r.planned.size(); ++i) {
    const model::LayoutAnswer& a = r.planned[i].answer;
    labels.push_back(r.planned[i].setting.hardware);
    tokens.push_back(a.best.empty() ? 0.0 : a.best.front().tokens_per_s);
    hours.push_back(r.runs[i] ? r.runs[i]->seconds / 3600 : 0.0);
    cost.push_back(r.runs[i] && r.runs[i]->usd ? *r.runs[i]->usd : 0.0);
  }
  nlohmann::json bars = {{{"title", "tokens/s of all " + std::to_string(r.gpus) + " GPUs (0: none fits)"},
                          {"unit", "tokens/s"},
                          {"values", tokens}}};
  if (r.training.tokens) {
    bars.push_back({{"title", "time for " + count_text(*r.training.tokens) + " tokens"}, {"unit", "hours"}, {"values", hours}});
  }
  if (!r.training.usd_per_gpu_hour.empty()) {
    bars.push_back({{"title", "cost of " + count_text(*r.training.tokens) + " tokens (0: no price)"},
                    {"unit", "US dollars"},
                    {"values", cost}});
  }
  const auto [header, rows] = limits_table(r);
  nlohmann::json notes = limits_verdicts(r);
  for (const auto& note : r.planned.front().setting.notes) notes.push_back(note);
  notes.push_back(layout_legend);
  write_html_bars(r.html, {{"title", limits_headline(r)},
                           {"subtitle", setting_text(r.planned.front().setting, r.gpus)},
                           {"labels", labels},
                           {"bars", bars},
                           {"columns", header},
                           {"rows", rows},
                           {"notes", notes}});
}

std::string emitted(const std::string& engine, const model::LayoutEstimate& e, const model::TransformerShape& shape,
                    const std::string& precision) {
  if (engine == "megatron") return megatron_arguments(e, shape, precision);
  if (engine == "torchtitan") return torchtitan_config(e, shape, precision);
  if (engine == "papaya") return papaya_arguments(e, precision);
  return "";
}

}  // namespace

void show_layout_prediction(const model::LayerModel& model, const std::string& emit, const workflow::ParallelRequest& request,
                            const model::ParallelLayout& layout, const std::string& plan, const Output& output) {
  LayoutPrediction r;
  r.gpus = layout.gpus();
  std::vector<std::string> plans;
  if (!plan.empty()) plans.push_back(plan);
  r.predicted = workflow::predict_layout(model, request, layout, plans);
  r.emit = emit;
  r.emitted = emitted(r.emit, r.predicted.estimates.front(), r.predicted.setting.shape, r.predicted.setting.precision);
  show(r, output);
}

void show_layout_limits(const model::LayerModel& model, const std::string& emit, workflow::ParallelRequest request,
                        const std::vector<std::string>& hardware, const TrainingQuestion& training, const std::string& html,
                        const Output& output) {
  if (!emit.empty()) throw InputError("--emit writes one layout: give it to plan or recommend, on one --hardware");
  LayoutLimits r;
  r.gpus = request.question.gpus;
  r.training = training;
  request.keep = 1;
  for (const std::string& name : hardware) {
    request.hardware = name;
    r.planned.push_back(workflow::plan_layouts(model, request));
  }
  price_training(r);
  r.html = html;
  if (!r.html.empty()) write_limits_page(r);
  show(r, output);
}

void show_layouts(const model::LayerModel& model, const std::string& emit, const workflow::ParallelRequest& request,
                  const Output& output, const std::string& model_path) {
  Laid r;
  r.model_path = model_path;
  r.gpus = request.question.gpus;
  r.planned = workflow::plan_layouts(model, request);
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
  r.emit = emit;
  r.emitted = emitted(r.emit, a.best.front(), r.planned.setting.shape, r.planned.setting.precision);
  show(r, output);
}

}  // namespace papaya::cli
