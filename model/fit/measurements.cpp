#include "model/fit/measurements.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <tuple>
#include <utility>

#include "model/catalog/hardware.h"
#include "model/error.h"
#include "model/units.h"

namespace papaya::model {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
const std::vector<std::string> kColumns = {"gpu", "network",       "precision", "strategy", "batch",
                                           "oom", "samples_per_s", "iter_s",    "peak_mib"};

const std::vector<std::string> kOptionalColumns = {"gpus"};

std::string expected_columns() {
  std::string out;
  for (const auto& c : kColumns) out += (out.empty() ? "" : ",") + c;
  for (const auto& c : kOptionalColumns) out += " [," + c + "]";
  return out;
}

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells = split(line, ',');
  for (auto& cell : cells) cell = trim(cell);
  return cells;
}

// One data row: its cells by column name, and where it is for errors.
class Row {
 public:
  Row(std::string where, const std::map<std::string, size_t>& index, std::vector<std::string> cells)
      : where_(std::move(where)), index_(index), cells_(std::move(cells)) {}

  [[noreturn]] void fail(const std::string& column, const std::string& message) const {
    throw InputError(where_ + ": column '" + column + "': " + message);
  }

  const std::string& text(const std::string& column) const { return cells_[index_.at(column)]; }

  std::string name(const std::string& column) const {
    if (text(column).empty()) fail(column, "empty; expected a name");
    return text(column);
  }

  int positive_int(const std::string& column) const {
    const std::string& s = text(column);
    char* end = nullptr;
    errno = 0;
    const long value = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || errno != 0 || value <= 0 || value > 100000000) {
      fail(column, "'" + s + "' is not a positive integer");
    }
    return static_cast<int>(value);
  }

  bool flag(const std::string& column) const {
    if (text(column) == "0") return false;
    if (text(column) == "1") return true;
    fail(column, "'" + text(column) + "' is not 0 or 1");
  }

  // Empty: not measured.
  std::optional<double> positive_number(const std::string& column) const {
    const std::string& s = text(column);
    if (s.empty()) return std::nullopt;
    char* end = nullptr;
    const double value = std::strtod(s.c_str(), &end);
    if (*end != '\0' || !std::isfinite(value) || value <= 0) fail(column, "'" + s + "' is not a positive number");
    return value;
  }

 private:
  std::string where_;
  const std::map<std::string, size_t>& index_;
  std::vector<std::string> cells_;
};

std::map<std::string, size_t> read_header(const std::string& line, const std::string& where) {
  std::map<std::string, size_t> index;
  const auto names = cells_of(line);
  for (size_t i = 0; i < names.size(); ++i) {
    if (std::find(kColumns.begin(), kColumns.end(), names[i]) == kColumns.end() &&
        std::find(kOptionalColumns.begin(), kOptionalColumns.end(), names[i]) == kOptionalColumns.end()) {
      throw InputError(where + ": unknown column '" + names[i] + "' (expected the header " + expected_columns() + ")");
    }
    if (!index.emplace(names[i], i).second) throw InputError(where + ": column '" + names[i] + "' appears twice");
  }
  for (const auto& c : kColumns) {
    if (!index.count(c))
      throw InputError(where + ": missing column '" + c + "' (expected the header " + expected_columns() + ")");
  }
  return index;
}

// The most memory a peak of `series` can take, and how to name it.
std::pair<double, std::string> peak_ceiling(const MeasuredSeries& series) {
  if (series.gpu_memory_bytes) return {*series.gpu_memory_bytes, "the " + series.gpu + "'s memory"};
  double largest = 0;
  for (const auto& h : hardware_catalog()) largest = std::max(largest, h.memory_bytes);
  return {largest, "the largest memory in the hardware catalog (" + series.gpu + " is not in it)"};
}

// Peaks in a series are all MiB or all bytes (see MeasuredSeries::peak_was_bytes).
void settle_peak_unit(MeasuredSeries& series, const std::string& source) {
  const auto [capacity, capacity_name] = peak_ceiling(series);
  const double capacity_mib = capacity / kMiB;
  int above = 0, recorded = 0;
  for (const auto& run : series.runs) {
    if (!run.peak_bytes) continue;
    ++recorded;
    above += *run.peak_bytes > capacity_mib;
  }
  series.peak_was_bytes = recorded > 0 && above == recorded;
  for (auto& run : series.runs) {
    if (!run.peak_bytes) continue;
    const double value = *run.peak_bytes;
    const std::string where = source + ":" + std::to_string(run.line) + ": column 'peak_mib': ";
    if (series.peak_was_bytes && value > capacity) {
      throw InputError(where + "'" + std::to_string(value) + "' is above " + capacity_name + " in MiB and in bytes");
    }
    if (!series.peak_was_bytes && value > capacity_mib) {
      throw InputError(where + "'" + std::to_string(value) + "' is above " + capacity_name + " (" +
                       std::to_string(static_cast<long>(capacity_mib)) + " MiB) while other rows of its series are below");
    }
    run.peak_bytes = series.peak_was_bytes ? value : value * kMiB;
  }
}

}  // namespace

double MeasuredRun::throughput() const { return samples_per_s ? *samples_per_s : batch / *iter_s; }

double MeasuredRun::iteration_s() const { return samples_per_s ? batch / *samples_per_s : *iter_s; }

Measurements parse_measurements(std::istream& in, const std::string& source) {
  std::string line;
  if (!std::getline(in, line) || trim(line).empty()) {
    throw InputError(source + ":1: expected the header " + expected_columns());
  }
  const auto index = read_header(line, source + ":1");

  Measurements out{source, {}};
  std::map<std::tuple<std::string, int, std::string, std::string, std::string>, size_t> series_of;
  std::map<std::string, std::optional<HardwareSpec>> gpus;  // by the name as written
  for (int number = 2; std::getline(in, line); ++number) {
    if (trim(line).empty()) continue;
    const std::string where = source + ":" + std::to_string(number);
    auto cells = cells_of(line);
    if (cells.size() != index.size()) {
      throw InputError(where + ": " + std::to_string(cells.size()) + " cells, expected " + std::to_string(index.size()) + " (" +
                       expected_columns() + ")");
    }
    const Row row(where, index, std::move(cells));

    const std::string gpu = row.name("gpu");
    if (!gpus.count(gpu)) gpus.emplace(gpu, find_hardware(gpu));
    MeasuredRun run;
    run.line = number;
    run.batch = row.positive_int("batch");
    run.oom = row.flag("oom");
    if (!run.oom) {  // an OOM row's figures are empty
      run.samples_per_s = row.positive_number("samples_per_s");
      run.iter_s = row.positive_number("iter_s");
      run.peak_bytes = row.positive_number("peak_mib");
      if (!run.samples_per_s && !run.iter_s) {
        row.fail("samples_per_s", "empty, and so is iter_s: a run that did not run out of memory needs one");
      }
    }

    const std::optional<HardwareSpec>& hw = gpus.at(gpu);
    const int gpu_count = index.count("gpus") ? row.positive_int("gpus") : 1;
    const auto key =
        std::make_tuple(hw ? hw->name : gpu, gpu_count, row.name("network"), row.name("precision"), row.name("strategy"));
    auto [it, added] = series_of.emplace(key, out.series.size());
    if (added) {
      MeasuredSeries series;
      if (hw) series.gpu_memory_bytes = hw->memory_bytes;
      std::tie(series.gpu, series.gpus, series.network, series.precision, series.strategy) = key;
      out.series.push_back(std::move(series));
    }
    out.series[it->second].runs.push_back(run);
  }
  for (auto& series : out.series) settle_peak_unit(series, source);
  return out;
}

Measurements read_measurements(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot read the measurements");
  return parse_measurements(in, path);
}

}  // namespace papaya::model
