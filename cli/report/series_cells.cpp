#include "cli/report/series_cells.h"

#include "cli/report/table.h"

namespace papaya::cli {
namespace {

std::string yes_no(bool value) { return value ? "yes" : "no"; }

}  // namespace

std::string helps_cell(const model::SeriesFit& fit) {
  if (!fit.verdict) return "baseline";
  const auto& v = *fit.verdict;
  std::string out = cell(v.helps, yes_no);
  if (v.helps_analytic && v.helps_analytic != v.helps) out += " (analytic: " + yes_no(*v.helps_analytic) + ")";
  return out;
}

std::string versus_baseline_cell(const model::SeriesFit& fit) {
  if (!fit.verdict) return "1.00";
  const auto ratio = fit.versus_baseline();
  return ratio ? fixed(ratio->value, 2) + "x" + (ratio->from_runs ? " (runs)" : "") : "-";
}

}  // namespace papaya::cli
