#include "model/catalog/layer_pattern.h"

#include <cctype>

#include "model/error.h"

namespace papaya::model {
namespace {

struct Range {
  long long low = 0, high = 0;
  size_t end = 0;  // the index past ']'
};

// The range of the bracket at `open`; end 0 where it is no [a-b] with a <= b.
Range parse_range(const std::string& pattern, size_t open) {
  Range r;
  size_t i = open + 1;
  const auto number = [&](long long& out) {
    const size_t start = i;
    while (i < pattern.size() && std::isdigit(static_cast<unsigned char>(pattern[i]))) ++i;
    if (i == start || i - start > 12) return false;
    out = std::stoll(pattern.substr(start, i - start));
    return true;
  };
  if (!number(r.low) || i >= pattern.size() || pattern[i] != '-') return r;
  ++i;
  if (!number(r.high) || i >= pattern.size() || pattern[i] != ']' || r.low > r.high) return r;
  r.end = i + 1;
  return r;
}

bool match(const std::string& pattern, size_t p, const std::string& path, size_t s) {
  while (p < pattern.size()) {
    const char c = pattern[p];
    if (c == '*') {
      for (size_t k = s; k <= path.size(); ++k) {
        if (match(pattern, p + 1, path, k)) return true;
      }
      return false;
    }
    if (c == '[') {
      const Range r = parse_range(pattern, p);
      size_t k = s;
      while (k < path.size() && std::isdigit(static_cast<unsigned char>(path[k]))) ++k;
      if (k == s || k - s > 12) return false;
      const long long value = std::stoll(path.substr(s, k - s));
      if (value < r.low || value > r.high) return false;
      p = r.end;
      s = k;
      continue;
    }
    if (s >= path.size() || (c != '?' && c != path[s])) return false;
    ++p;
    ++s;
  }
  return s == path.size();
}

}  // namespace

void check_layer_pattern(const std::string& pattern, const std::string& where) {
  if (pattern.empty()) throw InputError(where + ": an empty layer pattern");
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == ']') throw InputError(where + ": '" + pattern + "': a ']' without its '['");
    if (pattern[i] != '[') continue;
    const Range r = parse_range(pattern, i);
    if (r.end == 0) {
      throw InputError(where + ": '" + pattern + "': a bracket is a range of block numbers [a-b] with a <= b");
    }
    i = r.end - 1;
  }
}

bool matches_layer_pattern(const std::string& pattern, const std::string& path) { return match(pattern, 0, path, 0); }

}  // namespace papaya::model
