#include "cli/report/table.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <utility>

namespace papaya::cli {

Table::Table(std::vector<std::string> header) : header_(std::move(header)) {}

void Table::add_row(std::vector<std::string> cells) {
  cells.resize(header_.size());
  rows_.push_back(std::move(cells));
}

namespace {
bool numeric(const std::string& cell) {
  if (cell == "-") return true;  // a missing number
  return !cell.empty() && (std::isdigit(static_cast<unsigned char>(cell[0])) ||
                           (cell[0] == '-' && cell.size() > 1 && std::isdigit(static_cast<unsigned char>(cell[1]))));
}
}  // namespace

void Table::print(std::ostream& out) const {
  std::vector<size_t> width(header_.size());
  std::vector<bool> right(header_.size(), true);
  for (size_t c = 0; c < header_.size(); ++c) {
    width[c] = header_[c].size();
    bool any = false;
    for (const auto& row : rows_) {
      width[c] = std::max(width[c], row[c].size());
      if (!row[c].empty()) {
        any = true;
        right[c] = right[c] && numeric(row[c]);
      }
    }
    right[c] = right[c] && any;
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(width[c] - cells[c].size(), ' ');
      text += (c ? "  " : "") + (right[c] ? pad + cells[c] : cells[c] + (c + 1 < cells.size() ? pad : ""));
    }
    out << text << "\n";
  };
  line(header_);
  std::vector<std::string> rule;
  for (size_t w : width) rule.emplace_back(w, '-');
  line(rule);
  for (const auto& row : rows_) line(row);
}

std::string fixed(double value, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

std::string per_second(double value) {
  if (value == 0 || !std::isfinite(value)) return fixed(value, 1);
  const int magnitude = static_cast<int>(std::floor(std::log10(std::abs(value))));
  return fixed(value, std::max(0, 2 - magnitude));
}

std::string duration_text(double seconds) {
  if (seconds < 60) return fixed(seconds, 0) + " s";
  if (seconds < 3600) return fixed(seconds / 60, 1) + " min";
  if (seconds < 2 * 86400) return fixed(seconds / 3600, 1) + " h";
  return fixed(seconds / 86400, 1) + " days";
}

std::string count_text(double count) {
  static const std::pair<double, const char*> units[] = {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "k"}};
  for (const auto& [scale, suffix] : units) {
    if (count >= scale) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.3g%s", count / scale, suffix);
      return buf;
    }
  }
  return fixed(count, 0);
}

std::string usd_text(double usd) {
  if (usd < 100) return "$" + fixed(usd, 2);
  std::string digits = fixed(usd, 0);
  for (int at = static_cast<int>(digits.size()) - 3; at > 0; at -= 3) digits.insert(static_cast<size_t>(at), ",");
  return "$" + digits;
}

double error_fraction(double predicted, double measured) { return (predicted - measured) / measured; }

std::string error_percent(double predicted, double measured) {
  return (predicted >= measured ? "+" : "") + fixed(100 * error_fraction(predicted, measured), 1) + "%";
}

}  // namespace papaya::cli
