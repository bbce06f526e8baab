#include "cli/report/plan_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <ostream>

#include "cli/report/data_parallel_text.h"
#include "cli/report/html_report.h"
#include "cli/report/plot.h"
#include "cli/report/prediction_plot.h"
#include "cli/report/step_timeline.h"
#include "cli/report/table.h"
#include "model/plan_space/plan_space.h"
#include "model/plan_space/predict.h"
#include "model/units.h"

namespace papaya::cli {
namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// {0, 1, 2, 3, 5} -> "0-3,5"
std::string ranges(std::vector<long> numbers) {
  std::sort(numbers.begin(), numbers.end());
  numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
  std::string text;
  for (size_t i = 0; i < numbers.size();) {
    size_t j = i;
    while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1) ++j;
    text += (text.empty() ? "" : ",") + std::to_string(numbers[i]) + (j > i ? "-" + std::to_string(numbers[j]) : "");
    i = j + 1;
  }
  return text;
}

// Groups values by key in the order keys first appear.
template <typename T>
struct Ordered {
  std::vector<std::string> keys;
  std::map<std::string, std::vector<T>> values;
  void add(const std::string& key, T value) {
    if (!values.count(key)) keys.push_back(key);
    values[key].push_back(std::move(value));
  }
};

std::string shorten(const std::vector<std::string>& patterns, size_t most) {
  std::string text;
  for (size_t i = 0; i < patterns.size() && i < most; ++i) text += (i ? ", " : "") + patterns[i];
  if (patterns.size() > most) text += ", ... (" + std::to_string(patterns.size() - most) + " more)";
  return text;
}

struct TensorGroup {
  std::string strategy;  // or "recomputed": inside a recomputed segment
  int tensors = 0;
  double bytes = 0;  // raw, at the plan's batch
  std::vector<std::string> keys;
};

// The saved tensors by what the plan does with them: each strategy (most
// bytes first), then keep, then those inside recomputed segments.
std::vector<TensorGroup> tensor_groups(const model::LayerModel& m, const planner::PlanResult& r) {
  const double batch = static_cast<double>(r.batch);
  Ordered<std::pair<std::string, double>> by_strategy;
  for (const auto& layer : m.layers) {
    const bool recomputed = !layer.segment.empty() && r.plan.segment(layer.segment).recompute;
    for (const auto& t : layer.saved) {
      const std::string key = model::tensor_key(layer.path, t.slot);
      const double bytes = (t.per_sample ? t.numel_per_sample * batch : t.numel_per_sample) * t.element_size;
      by_strategy.add(recomputed ? "recomputed" : r.plan.tensor(layer.path, t.slot).name(), {key, bytes});
    }
  }
  std::vector<TensorGroup> groups;
  for (const auto& name : by_strategy.keys) {
    TensorGroup g{name, 0, 0, {}};
    for (const auto& [key, bytes] : by_strategy.values[name]) {
      ++g.tensors;
      g.bytes += bytes;
      g.keys.push_back(key);
    }
    groups.push_back(g);
  }
  const auto rank = [](const TensorGroup& g) { return g.strategy == "keep" ? 1 : g.strategy == "recomputed" ? 2 : 0; };
  std::stable_sort(groups.begin(), groups.end(), [&](const TensorGroup& a, const TensorGroup& b) {
    return rank(a) != rank(b) ? rank(a) < rank(b) : a.bytes > b.bytes;
  });
  return groups;
}

// Recomputed segments by the form their input is kept in.
Ordered<std::string> segment_groups(const model::LayerModel& m, const planner::PlanResult& r) {
  Ordered<std::string> groups;
  for (const auto& segment : m.segments) {
    const auto s = r.plan.segment(segment.path);
    if (s.recompute) groups.add(s.input.is_keep() ? "raw" : s.input.name(), segment.path);
  }
  return groups;
}

// Rows by samples/s where each fits (fixed batch: at it; else at its largest), keep first.
std::vector<const planner::GlobalRow*> ranked(const planner::GlobalTable& t) {
  std::vector<const planner::GlobalRow*> rows;
  for (const auto& row : t.rows) rows.push_back(&row);
  const auto rate = [&](const planner::GlobalRow* r) {
    if (t.batch_fixed) return r->at_batch.peak_bytes <= t.budget_bytes ? r->at_batch.samples_per_s : -1.0;
    return r->max_batch > 0 ? r->best.samples_per_s : -1.0;
  };
  std::stable_sort(rows.begin() + 1, rows.end(), [&](auto* a, auto* b) { return rate(a) > rate(b); });
  return rows;
}

double ratio(double a, double b) { return b > 0 ? a / b : 0; }

std::string percent_change(double now, double before) {
  const double change = 100 * (ratio(now, before) - 1);
  return (change >= 0 ? "+" : "") + fixed(change, 1) + "%";
}

}  // namespace

std::vector<std::string> fold_keys(const std::vector<std::string>& keys) {
  // Numbers: the first all-digit component of the path varies.
  Ordered<long> by_template;
  for (const auto& key : keys) {
    const size_t colon = key.find(':');
    const std::string path = key.substr(0, colon), slot = colon == std::string::npos ? "" : key.substr(colon);
    auto parts = model::split(path, '.');
    const auto number = std::find_if(parts.begin(), parts.end(), all_digits);
    if (number == parts.end()) {
      by_template.add(key, -1);
      continue;
    }
    const long value = std::stol(*number);
    *number = "\x01";
    std::string joined;
    for (const auto& p : parts) joined += (joined.empty() ? "" : ".") + p;
    by_template.add(joined + slot, value);
  }
  // Slots of one (folded) layer path joined.
  Ordered<std::string> by_path;
  for (const auto& key : by_template.keys) {
    std::string text = key;
    const auto& numbers = by_template.values[key];
    const size_t mark = text.find('\x01');
    if (mark != std::string::npos) {
      const std::string n = ranges(numbers);
      text.replace(mark, 1, n.find_first_of(",-") == std::string::npos ? n : "{" + n + "}");
    }
    const size_t colon = text.find(':');
    by_path.add(text.substr(0, colon), colon == std::string::npos ? "" : text.substr(colon + 1));
  }
  std::vector<std::string> folded;
  for (const auto& path : by_path.keys) {
    const auto& slots = by_path.values[path];
    if (slots.size() == 1) {
      folded.push_back(slots[0].empty() ? path : path + ":" + slots[0]);
      continue;
    }
    std::string joined;
    for (const auto& s : slots) joined += (joined.empty() ? "" : ",") + s;
    folded.push_back(path + ":{" + joined + "}");
  }
  return folded;
}

std::string verdict(const planner::GlobalTable& table, const planner::GlobalRow& row) {
  if (&row == &table.keep()) return "baseline";
  if (row.max_batch == 0) return "does not fit";
  return row.helps ? "helps" : "no gain";
}

void print_plan(std::ostream& out, const model::LayerModel& m, const planner::PlanResult& r) {
  const auto& e = r.estimate;
  if (r.data_parallel.active()) {
    out << "data parallel: " << r.hardware << data_parallel_text(r.data_parallel) << ": batch, peak and static bytes per GPU ("
        << model::format_bytes(model::static_bytes_per_rank(m, r.data_parallel)) << " static), samples/s of all GPUs\n";
  }
  out << "plan: " << (r.per_layer ? "per-layer" : r.plan.name + " (whole-network; the per-layer search found nothing faster)")
      << ", batch " << r.batch << (r.request.batch ? "" : " (the batch with the most samples/s)") << ": "
      << per_second(e.samples_per_s) << " samples/s (" << fixed(e.seconds * 1e3, 2) << " ms/step), peak "
      << model::format_bytes(e.peak_bytes) << " of " << model::format_bytes(r.request.budget_bytes) << " at "
      << model::peak_location(m, e) << "\n";
  if (const planner::GlobalRow* g = r.global.fastest(r.request.variance_budget)) {
    const double rate = r.global.batch_fixed ? g->at_batch.samples_per_s : g->best.samples_per_s;
    const int64_t batch = r.global.batch_fixed ? r.global.batch : g->max_batch;
    out << "best whole-network combination: " << g->name << " at batch " << batch << ", " << fixed(rate, 1)
        << " samples/s (this plan: " << percent_change(e.samples_per_s, rate) << ")\n";
  } else {
    out << "no whole-network combination fits" << (r.request.variance_budget ? " within the variance budget" : "") << "\n";
  }
  if (r.request.variance_budget) {
    out << "gradient variance (proxy): " << fixed(r.variance, 4) << " of quantize-2 everywhere (budget "
        << fixed(*r.request.variance_budget, 4) << ")\n";
  }
  if (e.host_bytes > 0) out << "pinned host memory for swapped tensors: " << model::format_bytes(e.host_bytes) << "\n";
  const auto segments = segment_groups(m, r);
  size_t recomputed = 0;
  for (const auto& form : segments.keys) recomputed += segments.values.at(form).size();
  out << "recomputed segments: " << recomputed << " of " << m.segments.size();
  for (const auto& form : segments.keys)
    out << (form == segments.keys.front() ? ": " : "; ") << shorten(fold_keys(segments.values.at(form)), 6) << " (input " << form
        << ")";
  out << "\n";
  Table table({"saved tensors", "count", "bytes at batch " + std::to_string(r.batch), "where"});
  for (const auto& g : tensor_groups(m, r)) {
    const std::string which = g.strategy == "keep"         ? "every other"
                              : g.strategy == "recomputed" ? "inside the recomputed segments"
                                                           : shorten(fold_keys(g.keys), 4);
    table.add_row(
        {g.strategy == "recomputed" ? "recomputed" : g.strategy, std::to_string(g.tensors), model::format_bytes(g.bytes), which});
  }
  table.print(out);
}

void print_global(std::ostream& out, const planner::PlanResult& r, size_t shown) {
  const planner::GlobalTable& t = r.global;
  const bool variance = r.request.variance_budget.has_value();
  std::vector<std::string> header;
  if (t.batch_fixed) {
    const std::string b = "@" + std::to_string(t.batch);
    header = {"strategy", "peak " + b, "fits", "samples/s " + b, "largest batch", "samples/s there", "verdict"};
  } else {
    header = {"strategy", "largest batch", "samples/s there", "vs keep", "peak there", "verdict"};
  }
  if (variance) header.insert(header.end() - 1, "variance");
  Table table(header);
  const auto rows = ranked(t);
  const double keep_rate = t.keep().best.samples_per_s;
  for (size_t i = 0; i < rows.size() && i <= shown; ++i) {
    const planner::GlobalRow& row = *rows[i];
    const bool fits = row.max_batch > 0;
    std::vector<std::string> cells;
    if (t.batch_fixed) {
      cells = {row.name,
               model::format_bytes(row.at_batch.peak_bytes),
               row.at_batch.peak_bytes <= t.budget_bytes ? "yes" : "no",
               per_second(row.at_batch.samples_per_s),
               std::to_string(row.max_batch),
               fits ? per_second(row.best.samples_per_s) : "-"};
    } else {
      cells = {row.name, std::to_string(row.max_batch), fits ? per_second(row.best.samples_per_s) : "-",
               fits && keep_rate > 0 ? fixed(ratio(row.best.samples_per_s, keep_rate), 2) : "-",
               fits ? model::format_bytes(row.best.peak_bytes) : "-"};
    }
    if (variance) cells.push_back(fixed(row.variance, 4));
    cells.push_back(verdict(t, row));
    table.add_row(cells);
  }
  out << "PAPAYA's table: whole-network combinations within " << model::format_bytes(t.budget_bytes)
      << (t.batch_fixed ? " at batch " + std::to_string(t.batch) : ", each at its largest batch")
      << "; verdict: beats keep, each at its largest batch";
  if (rows.size() > shown + 1) out << " (fastest " << shown << " of " << rows.size() - 1 << " shown; --json lists all)";
  out << "\n";
  table.print(out);
}

std::string train_command(const std::string& path, const planner::PlanResult& result) {
  return std::string("papaya train ") + (result.data_parallel.active() ? "--layout " : "--plan ") + path;
}

nlohmann::json result_json(const model::LayerModel& m, const planner::PlanResult& r) {
  nlohmann::json tensors = nlohmann::json::array(), segments = nlohmann::json::array(), global = nlohmann::json::array();
  for (const auto& g : tensor_groups(m, r)) {
    tensors.push_back({{"strategy", g.strategy}, {"tensors", g.tensors}, {"bytes", g.bytes}, {"where", fold_keys(g.keys)}});
  }
  const auto by_form = segment_groups(m, r);
  for (const auto& form : by_form.keys) segments.push_back({{"input", form}, {"where", fold_keys(by_form.values.at(form))}});
  for (const auto& row : r.global.rows) {
    global.push_back({{"strategy", row.name},
                      {"max_batch", row.max_batch},
                      {"samples_per_s_there", row.best.samples_per_s},
                      {"peak_bytes_there", row.best.peak_bytes},
                      {"batch", r.global.batch},
                      {"peak_bytes", row.at_batch.peak_bytes},
                      {"samples_per_s", row.at_batch.samples_per_s},
                      {"variance", row.variance},
                      {"verdict", verdict(r.global, row)}});
  }
  return {{"network", m.network},
          {"hardware", r.hardware},
          {"budget_bytes", r.request.budget_bytes},
          {"static_bytes", m.static_bytes},
          {"static_bytes_per_gpu", model::static_bytes_per_rank(m, r.data_parallel)},
          {"data_parallel", data_parallel_json(r.data_parallel)},
          {"batch", r.batch},
          {"batch_chosen", !r.request.batch.has_value()},
          {"per_layer", r.per_layer},
          {"name", r.plan.name},
          {"peak_bytes", r.estimate.peak_bytes},
          {"peak_at", model::peak_location(m, r.estimate)},
          {"samples_per_s", r.estimate.samples_per_s},
          {"seconds", r.estimate.seconds},
          {"host_bytes", r.estimate.host_bytes},
          {"variance", r.variance},
          {"variance_budget", r.request.variance_budget ? nlohmann::json(*r.request.variance_budget) : nlohmann::json()},
          {"tensors", tensors},
          {"segments", segments},
          {"global", global},
          {"plan", planner::plan_document(r, m.layout())}};
}

namespace {

std::string chosen_name(const planner::PlanResult& r) { return r.per_layer ? "per-layer plan" : r.plan.name; }

// What a figure of a plan shows: the chosen plan, keep and the three fastest
// other combinations that fit; and the batch its axis reaches.
std::vector<std::pair<std::string, model::Plan>> figure_plans(const model::LayerModel& m, const planner::PlanResult& r,
                                                              int64_t& top) {
  std::vector<std::pair<std::string, model::Plan>> plans = {{chosen_name(r), r.plan}};
  top = std::max<int64_t>(8, 2 * r.batch);
  for (const planner::GlobalRow* row : ranked(r.global)) {
    if (plans.size() >= 5 || (row->max_batch == 0 && row != &r.global.keep())) continue;
    if (row->name == r.plan.name) continue;
    plans.push_back({row->name, model::expand_plan_name(row->name, m.layout())});
    top = std::max<int64_t>(top, row->max_batch * 5 / 4);
  }
  return plans;
}

// The figure's panels, the chosen plan marked at its batch.
PredictionPanels result_panels(const model::LayerModel& m, const model::Target& target, const planner::PlanResult& r,
                               int64_t& top) {
  const auto plans = figure_plans(m, r, top);
  PredictionPanels panels = prediction_panels(m, target, plans, top, r.request.budget_bytes);
  panels.memory.series.front().points.push_back({static_cast<double>(r.batch), r.estimate.peak_bytes / panels.bytes_per_unit});
  panels.throughput.series.front().points.push_back({static_cast<double>(r.batch), r.estimate.samples_per_s});
  panels.memory.points_label = panels.throughput.points_label = "chosen, batch " + std::to_string(r.batch);
  return panels;
}

}  // namespace

void plot_result(const std::string& path, const model::LayerModel& m, const model::Target& target, const planner::PlanResult& r) {
  int64_t top = 0;
  const PredictionPanels panels = result_panels(m, target, r, top);
  write_plot(path, m.network + " on " + target.name + ": the chosen plan (marked) and whole-network combinations",
             {panels.memory, panels.throughput});
}

void report_result(const std::string& path, const std::string& command, const model::LayerModel& m, const model::Target& target,
                   const planner::PlanResult& r) {
  int64_t top = 0;
  const PredictionPanels panels = result_panels(m, target, r, top);
  model::Plan chosen = r.plan;
  chosen.name = chosen_name(r);
  nlohmann::json rows = nlohmann::json::array();
  for (const planner::GlobalRow* row : ranked(r.global)) {
    const model::Estimate& e = row->at_batch;
    rows.push_back({row->name, std::to_string(row->max_batch), model::format_bytes(e.peak_bytes), per_second(e.samples_per_s),
                    row->helps ? "helps" : "-"});
  }
  write_html_report(
      path,
      {{"title",
        "papaya " + command + ": " + m.network + " on " + r.hardware + ", batch " + std::to_string(r.batch) + ": " + chosen.name},
       {"subtitle", "budget " + model::format_bytes(r.request.budget_bytes) + "; the chosen plan " +
                        model::format_bytes(r.estimate.peak_bytes) + ", " + per_second(r.estimate.samples_per_s) + " samples/s"},
       {"timelines",
        {step_timeline(m, target, model::expand_plan_name("keep", m.layout()), r.batch),
         step_timeline(m, target, chosen, r.batch)}},
       {"curves", {{"memory", panel_json(panels.memory, top)}, {"throughput", panel_json(panels.throughput, top)}}},
       {"columns",
        {"whole-network combination", "largest batch", "peak at batch " + std::to_string(r.global.batch), "samples/s",
         "verdict"}},
       {"plans", rows}});
}

}  // namespace papaya::cli
