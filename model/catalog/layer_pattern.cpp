#include "model/catalog/layer_pattern.h"

#include <cctype>
#include <vector>

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

// Whether pattern[p..] matches path[s..], each (p, s) decided once (`memo`:
// 0 unknown, 1 no, 2 yes), so that stars cost |pattern| x |path| at most.
bool match(const std::string& pattern, size_t p, const std::string& path, size_t s, std::vector<char>& memo) {
  char& known = memo[p * (path.size() + 1) + s];
  if (known != 0) return known == 2;
  bool out = false;
  if (p == pattern.size()) {
    out = s == path.size();
  } else if (pattern[p] == '*') {
    out = match(pattern, p + 1, path, s, memo) || (s < path.size() && match(pattern, p, path, s + 1, memo));
  } else if (pattern[p] == '[') {
    const Range r = parse_range(pattern, p);
    size_t k = s;
    while (k < path.size() && std::isdigit(static_cast<unsigned char>(path[k]))) ++k;
    if (k > s && k - s <= 12) {
      const long long value = std::stoll(path.substr(s, k - s));
      out = value >= r.low && value <= r.high && match(pattern, r.end, path, k, memo);
    }
  } else {
    out = s < path.size() && (pattern[p] == '?' || pattern[p] == path[s]) && match(pattern, p + 1, path, s + 1, memo);
  }
  known = out ? 2 : 1;
  return out;
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

bool matches_layer_pattern(const std::string& pattern, const std::string& path) {
  std::vector<char> memo((pattern.size() + 1) * (path.size() + 1), 0);
  return match(pattern, 0, path, 0, memo);
}

}  // namespace papaya::model
