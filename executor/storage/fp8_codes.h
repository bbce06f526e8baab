#pragma once
// FP8 numbers in 1-byte codes (E4M3 "fn", E5M2), for a LibTorch that has
// no float8 dtype: a tensor scaled and cast to them, and the codes read back
// as the values they stand for. Casts round to nearest (ties to even) and
// saturate at the format's largest value, as torchao's and Transformer
// Engine's casts do.
#include <torch/torch.h>

#include "model/fp8_recipe.h"

namespace papaya::executor {

// The codes of x·scale, one uint8 each: x a vector or a matrix, or rows of
// its last dimension; scale a scalar, or one a row or a column of them
// ((rows, 1) or (1, columns)). Cast a tile of rows at a time, so that its
// scratch is bounded whatever x's size: what a step holds is the codes, as
// a GPU's fused cast holds them.
torch::Tensor fp8_encode(const torch::Tensor& x, const torch::Tensor& scale, model::Fp8Format format);

// The elements a tile of the casts and products above works on at a time.
constexpr int64_t fp8_tile_elements = 1 << 14;

// The largest magnitude in t, as a scalar; along `dim` with its size kept
// (amax), without the copy t.abs() would make.
torch::Tensor fp8_amax(const torch::Tensor& t);
torch::Tensor fp8_amax(const torch::Tensor& t, int64_t dim);

// The values `codes` stand for, in `dtype` (bf16 and fp32 hold each exactly).
torch::Tensor fp8_decode(const torch::Tensor& codes, model::Fp8Format format, torch::ScalarType dtype);

// The scale that maps `amax` to the format's largest value (1 where amax is
// 0), fp32; with power_of_two, rounded down to a power of two (torchao's
// rowwise recipe).
torch::Tensor fp8_scale(const torch::Tensor& amax, model::Fp8Format format, bool power_of_two = false);

}  // namespace papaya::executor
