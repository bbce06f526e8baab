#pragma once
// FP8 numbers in 1-byte codes (E4M3 "fn", E5M2), for a LibTorch that has
// no float8 dtype: a tensor scaled and cast to them, and the codes read back
// as the values they stand for. Casts round to nearest (ties to even) and
// saturate at the format's largest value, as torchao's and Transformer
// Engine's casts do.
#include <torch/torch.h>

#include "model/fp8_recipe.h"

namespace papaya::executor {

// The codes of x·scale (scale broadcast against x), one uint8 each.
torch::Tensor fp8_encode(const torch::Tensor& x, const torch::Tensor& scale, model::Fp8Format format);

// The values `codes` stand for, in `dtype` (bf16 and fp32 hold each exactly).
torch::Tensor fp8_decode(const torch::Tensor& codes, model::Fp8Format format, torch::ScalarType dtype);

// The scale that maps `amax` to the format's largest value (1 where amax is
// 0), fp32; with power_of_two, rounded down to a power of two (torchao's
// rowwise recipe).
torch::Tensor fp8_scale(const torch::Tensor& amax, model::Fp8Format format, bool power_of_two = false);

}  // namespace papaya::executor
