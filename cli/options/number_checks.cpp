#include "cli/options/number_checks.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace papaya::cli {
namespace {

std::string shown(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// "a whole number of at least 1", "a number above 0", "a number from 0.01 to 1".
std::string allowed(bool whole, double low, bool low_open, double high) {
  const std::string kind = whole ? "a whole number" : "a number";
  if (std::isinf(high)) return kind + (low_open ? " above " : " of at least ") + shown(low);
  return kind + " from " + shown(low) + (low_open ? " (not included)" : "") + " to " + shown(high);
}

// `text` read whole as a number (a whole one where `whole`), or nullopt.
std::optional<double> number_in(const std::string& text, bool whole) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double value = whole ? static_cast<double>(std::strtoll(text.c_str(), &end, 10)) : std::strtod(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

}  // namespace

CLI::Validator number_check(bool whole, double low, bool low_open, double high) {
  const std::string range = allowed(whole, low, low_open, high);
  CLI::Validator check(
      [=](std::string& input) -> std::string {
        const std::optional<double> value = number_in(input, whole);
        const bool fits = value && (low_open ? *value > low : *value >= low) && *value <= high;
        return fits ? std::string() : "must be " + range + " (got '" + input + "')";
      },
      std::isinf(high) ? (low_open ? "> " : ">= ") + shown(low) : shown(low) + " to " + shown(high));
  return check;
}

}  // namespace papaya::cli
