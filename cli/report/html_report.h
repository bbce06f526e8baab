#pragma once
// A report as one self-contained HTML page (no network access when opened):
// Chart.js (Debian's libjs-chart.js) inlined, the report's figures as JSON,
// and the page's own script that lays them out: the memory timeline of one
// training step, layer by layer, stacked by what is held, for keep and the
// chosen plan (switchable), its peak marked and its layer named, hovering
// naming the largest saved tensors at each point; peak memory
// and samples/s against the batch for each whole-network plan, the budget
// drawn; and tables of the plans and of the chosen plan by layer.
#include <nlohmann/json.hpp>
#include <string>

#include "cli/report/plot.h"

namespace papaya::cli {

// A figure's panel as the page draws it, its batch axis from 1 to `top`.
nlohmann::json panel_json(const PlotPanel& panel, int64_t top);

// Throws InputError (naming `option`) where the page cannot be made: no
// Chart.js installed, or a path that cannot be written.
void check_html_report(const std::string& path, const std::string& option = "--html");

// Writes `report` ({"title", "subtitle", "timelines": [step_timeline (step_timeline.h)...],
// "curves": {"memory": panel, "throughput": panel}, "budget_bytes",
// "plans": [rows], "columns": [names]}) as the page, atomically.
void write_html_report(const std::string& path, const nlohmann::json& report);

// Writes `report` ({"title", "subtitle", "labels": [a bar's name...],
// "bars": [{"title", "unit", "values": [one a label]}...], "columns",
// "rows": [[cells]...], "notes": [lines]}) as a page of bar charts, one a
// figure compared across the labels (limits' GPU types), then the table.
void write_html_bars(const std::string& path, const nlohmann::json& report);

}  // namespace papaya::cli
