#include "model/catalog/input_spec.h"

#include <algorithm>
#include <array>

#include "model/error.h"
#include "model/units.h"

namespace papaya::model {
namespace {

constexpr std::array<const char*, 7> kDtypes = {"float32", "float64", "float16", "bfloat16", "int64", "int32", "bool"};

std::string dtype_list() {
  std::string out;
  for (const char* d : kDtypes) out += (out.empty() ? "" : ", ") + std::string(d);
  return out;
}

// A positive integer that fits int64, or nullopt.
std::optional<int64_t> positive(const std::string& text) {
  if (text.empty() || text.size() > 18 || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  const int64_t value = std::stoll(text);
  return value > 0 ? std::optional<int64_t>(value) : std::nullopt;
}

}  // namespace

bool InputSpec::integral() const { return dtype == "int64" || dtype == "int32"; }

std::vector<int64_t> InputSpec::shape(int64_t batch) const {
  std::vector<int64_t> out;
  for (const auto& d : dims) out.push_back(d.value_or(batch));
  return out;
}

std::string InputSpec::text() const {
  std::string out = dtype + "[";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? "," : "") + (dims[i] ? std::to_string(*dims[i]) : std::string("B"));
  out += "]";
  if (below) out += "<" + std::to_string(*below);
  return out;
}

InputSpec parse_input_spec(const std::string& text, const std::string& where) {
  const auto fail = [&](const std::string& why) {
    throw InputError(where + ": '" + text + "': " + why + " (expected DTYPE[B,...] such as float32[B,3,224,224] or " +
                     "int64[B,128]<50257)");
  };
  const size_t open = text.find('['), close = text.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) fail("no [shape]");
  InputSpec spec;
  spec.dtype = text.substr(0, open);
  if (std::find(kDtypes.begin(), kDtypes.end(), spec.dtype) == kDtypes.end()) {
    fail("unknown dtype '" + spec.dtype + "' (" + dtype_list() + ")");
  }
  int batches = 0;
  for (const auto& dim : split(text.substr(open + 1, close - open - 1), ',')) {
    if (dim == "B") {
      ++batches;
      spec.dims.emplace_back();
    } else if (const auto size = positive(dim)) {
      spec.dims.emplace_back(*size);
    } else {
      fail("dimension '" + dim + "' is neither B nor a positive integer");
    }
  }
  if (batches != 1) fail("B, the batch, appears " + std::to_string(batches) + " times; once is needed");
  const std::string rest = text.substr(close + 1);
  if (!rest.empty()) {
    const auto bound = rest[0] == '<' ? positive(rest.substr(1)) : std::nullopt;
    if (!bound) fail("after the shape only <N>, a bound on integer values, may follow");
    if (!spec.integral()) fail("a bound <N> applies to int64 and int32 inputs only");
    spec.below = bound;
  }
  return spec;
}

}  // namespace papaya::model
