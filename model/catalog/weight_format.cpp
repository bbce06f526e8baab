#include "model/catalog/weight_format.h"

#include "model/error.h"

namespace papaya::model {

WeightFormat parse_weight_format(const std::string& name, const std::string& where) {
  if (name == "fp32") return WeightFormat::fp32;
  if (name == "bf16") return WeightFormat::bf16;
  if (name == "int8") return WeightFormat::int8;
  if (name == "nf4") return WeightFormat::nf4;
  throw InputError(where + ": '" + name + "' is no weight format (fp32, bf16, int8, nf4)");
}

std::string to_string(WeightFormat format) {
  switch (format) {
    case WeightFormat::fp32: return "fp32";
    case WeightFormat::bf16: return "bf16";
    case WeightFormat::int8: return "int8";
    case WeightFormat::nf4: return "nf4";
  }
  return "?";
}

int64_t stored_weight_bytes(int64_t rows, int64_t cols, WeightFormat format) {
  const int64_t n = rows * cols;
  switch (format) {
    case WeightFormat::fp32: return 4 * n;
    case WeightFormat::bf16: return 2 * n;
    case WeightFormat::int8: return n + 4 * rows;
    case WeightFormat::nf4: {
      const int64_t blocks = (n + nf4_block - 1) / nf4_block;
      const int64_t groups = (blocks + nf4_absmax_block - 1) / nf4_absmax_block;
      return blocks * nf4_block / 2 + blocks + 4 * groups + 4;
    }
  }
  return 4 * n;
}

}  // namespace papaya::model
