#pragma once
// What `papaya plan` and `papaya recommend` show of a planner result
// (planner/planner.h): the chosen plan read per layer, PAPAYA's table of
// whole-network combinations, the JSON form of both, and the figure.
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/catalog/target.h"
#include "model/layer_model.h"
#include "planner/planner.h"

namespace papaya::cli {

// Keys that differ in one number folded into one pattern, and slots of one
// layer joined, in the order given: {"blocks.0.fc1:input", "blocks.1.fc1:input",
// "blocks.3.fc1:input"} -> {"blocks.{0-1,3}.fc1:input"}.
std::vector<std::string> fold_keys(const std::vector<std::string>& keys);

// The plan's headline, its recomputed segments and its tensors grouped by
// strategy (with the layers each group covers).
void print_plan(std::ostream& out, const model::LayerModel& model, const planner::PlanResult& result);

// PAPAYA's table, fastest first; at most `shown` rows besides keep.
void print_global(std::ostream& out, const planner::PlanResult& result, size_t shown);

// A "global" row's verdict in words: baseline, helps, no gain, does not fit.
std::string verdict(const planner::GlobalTable& table, const planner::GlobalRow& row);

// How `papaya train` trains the plan file `path` written of `result`: with
// --layout where it was made for data-parallel GPUs (their ranks and ZeRO
// stage too), else with --plan.
std::string train_command(const std::string& path, const planner::PlanResult& result);

// The result as one JSON document (plan, prediction, grouping, table).
nlohmann::json result_json(const model::LayerModel& model, const planner::PlanResult& result);

// Memory and samples/s against the batch for the chosen plan and the fastest
// whole-network combinations, with the budget (cli/report/plot.h).
void plot_result(const std::string& path, const model::LayerModel& model, const model::Target& target,
                 const planner::PlanResult& result);

// The HTML report (cli/report/html_report.h) of `command`'s plan: the step under
// keep and under the plan, the figure's plans against the batch, PAPAYA's table.
void report_result(const std::string& path, const std::string& command, const model::LayerModel& model,
                   const model::Target& target, const planner::PlanResult& result);

}  // namespace papaya::cli
