#include "model/fp8_recipe.h"

namespace papaya::model {

Fp8Recipe fp8_recipe_of(const std::string& precision) {
  if (precision == "fp8-tensorwise") return Fp8Recipe::tensorwise;
  if (precision == "fp8-rowwise") return Fp8Recipe::rowwise;
  if (precision == "fp8-delayed") return Fp8Recipe::delayed;
  return Fp8Recipe::none;
}

bool is_fp8_precision(const std::string& precision) { return fp8_recipe_of(precision) != Fp8Recipe::none; }

Fp8FormatSpec fp8_format_spec(Fp8Format format) {
  // E4M3 "fn": no infinities, 1.75 x 2^8 the largest; E5M2 IEEE-like.
  return format == Fp8Format::e4m3 ? Fp8FormatSpec{3, 7, 448.0} : Fp8FormatSpec{2, 15, 57344.0};
}

bool runs_in_fp8(int64_t in_features, int64_t out_features) { return in_features % 16 == 0 && out_features % 16 == 0; }

int64_t fp8_state_bytes(Fp8Recipe recipe, int64_t in_features, int64_t out_features) {
  if (recipe != Fp8Recipe::delayed) return 0;
  const int64_t history = fp8_amax_history_length * fp8_tensors_per_layer * 4;
  const int64_t scales = fp8_tensors_per_layer * 4, step = 8 + 1;  // the count and whether a step is open
  return 2 * in_features * out_features + history + scales + step;
}

}  // namespace papaya::model
