#include "model/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "model/error.h"

namespace papaya::model {

int64_t parse_size(const std::string& text, const std::string& what) {
  static const std::map<std::string, double> units = {{"", 1.0},
                                                      {"b", 1.0},
                                                      {"k", 1024.0},
                                                      {"kb", 1e3},
                                                      {"kib", 1024.0},
                                                      {"m", 1048576.0},
                                                      {"mb", 1e6},
                                                      {"mib", 1048576.0},
                                                      {"g", 1073741824.0},
                                                      {"gb", 1e9},
                                                      {"gib", 1073741824.0},
                                                      {"t", 1099511627776.0},
                                                      {"tb", 1e12},
                                                      {"tib", 1099511627776.0}};
  size_t used = 0;
  double number = 0;
  try {
    number = std::stod(text, &used);
  } catch (const std::exception&) {
    throw InputError(what + ": '" + text + "' is not a size (examples: 24GiB, 800MiB, 16GB)");
  }
  std::string unit;
  for (size_t i = used; i < text.size(); ++i) {
    if (!std::isspace(static_cast<unsigned char>(text[i]))) unit += static_cast<char>(std::tolower(text[i]));
  }
  const auto it = units.find(unit);
  const double bytes = it == units.end() ? 0 : number * it->second;
  // Whole bytes: less than half of one would round to none.
  if (!std::isfinite(number) || bytes < 0.5) {
    throw InputError(what + ": '" + text + "' is not a positive size (examples: 24GiB, 800MiB, 16GB)");
  }
  // llround past int64 gives no error, only a wrong figure (x86: the most negative one).
  if (bytes >= 9223372036854775808.0) throw InputError(what + ": '" + text + "' is too large a size");
  return static_cast<int64_t>(std::llround(bytes));
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, sep)) parts.push_back(part);
  if (!text.empty() && text.back() == sep) parts.push_back("");
  return parts;
}

std::vector<int> parse_int_list(const std::string& text, const std::string& what) {
  std::vector<int> out;
  for (const std::string& item : split(text, ',')) {
    size_t used = 0;
    long value = 0;
    try {
      value = std::stol(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || value <= 0 || value > 1000000) {
      throw InputError(what + ": '" + item + "' is not a positive integer");
    }
    out.push_back(static_cast<int>(value));
  }
  if (out.empty()) throw InputError(what + ": empty list");
  return out;
}

std::string format_bytes(double bytes) {
  static const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024.0 && i < 4) {
    v /= 1024.0;
    ++i;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, i == 0 ? "%.0f %s" : "%.2f %s", v, names[i]);
  return buf;
}

std::string format_si(double value) {
  static const char* names[] = {"", "k", "M", "G", "T", "P"};
  int i = 0;
  double v = value;
  while (std::fabs(v) >= 1000.0 && i < 5) {
    v /= 1000.0;
    ++i;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %s", v, names[i]);
  return buf;
}

}  // namespace papaya::model
