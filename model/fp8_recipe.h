#pragma once
// FP8 training recipes, as the libraries that run them define them: which
// linear layers they convert, the 1-byte formats and scales each product's
// operands take, and the state a converted layer holds between steps. The
// executor emulates them (executor/layers/fp8_linear.h); the model prices
// their products at the GPU's FP8 peak (catalog/layer_kernels.h). What each
// keeps is stated in docs/memory-model.md.
#include <cstdint>
#include <string>

namespace papaya::model {

enum class Fp8Recipe {
  none,
  tensorwise,  // torchao float8 "tensorwise": one scale a tensor, E4M3 forward, E5M2 gradients
  rowwise,     // torchao float8 "rowwise": a scale a row (power of two), E4M3 throughout
  delayed,     // Transformer Engine's delayed scaling: scales from an amax history, E4M3 forward, E5M2 gradients
};

// The recipe a precision names ("fp8-tensorwise", "fp8-rowwise",
// "fp8-delayed"); none for any other precision.
Fp8Recipe fp8_recipe_of(const std::string& precision);
bool is_fp8_precision(const std::string& precision);

enum class Fp8Format { e4m3, e5m2 };

struct Fp8FormatSpec {
  int mantissa_bits;
  int exponent_bias;
  double max;  // the largest finite value: casts saturate to it
};
Fp8FormatSpec fp8_format_spec(Fp8Format format);

// Whether a GPU's FP8 product takes a linear layer of these features: both
// multiples of 16 (torchao and torchtitan leave other linears in bf16, and
// the model prices them so). The executor's emulation converts every
// linear: a profile taken at a fraction of a network's widths
// (catalog/shape_fraction.h), which need not be multiples of 16, measures
// what the whole network's linears save.
bool runs_in_fp8(int64_t in_features, int64_t out_features);

// Transformer Engine's delayed scaling keeps, per converted layer, an amax
// history of this many steps (DelayedScaling's default) for each of its
// five FP8 tensors (forward: input, weight, output; backward: output's
// gradient, input's gradient), their five fp32 scales, its step count and
// whether one is open, and
// the FP8 weight with its transpose (Hopper's FP8 products read both
// operands K-major).
constexpr int64_t fp8_amax_history_length = 1024;
constexpr int64_t fp8_tensors_per_layer = 5;

// Bytes a converted layer holds between steps beside its parameters.
int64_t fp8_state_bytes(Fp8Recipe recipe, int64_t in_features, int64_t out_features);

}  // namespace papaya::model
