#pragma once
// Compression of saved tensors, on the CPU here (one pass over each group,
// parallel over groups) and on CUDA (cuda/quantize.cu): both take their
// arithmetic from quant_math.h and write the same bytes for the same seed:
//  - quantized: values in groups of G (a group never crosses a head when
//    headwise), each group's min and scale as bf16 (the min rounded down and
//    the scale up, so that the group's range stays covered), codes by
//    stochastic rounding against those stored values (unbiased; noise a
//    hash of one seed from rounding_generator() per call and of the value's
//    index), `bits` per code packed into bytes, the first
//    code in the lowest bits. One uint8 buffer:
//      [groups x G*bits/8 code bytes][groups x bf16 min][groups x bf16 scale]
//  - mask: 1 bit per element, the same packing, ceil(numel/8) bytes.
#include <ATen/ATen.h>

#include "executor/storage/quant_layout.h"

namespace papaya::executor {

// `x` (any floating dtype) -> a uint8 buffer of layout.bytes().
at::Tensor quantize(const at::Tensor& x, const QuantLayout& layout);
// The buffer -> values of `shape` in `dtype`.
at::Tensor dequantize(const at::Tensor& buffer, const QuantLayout& layout, at::IntArrayRef shape, at::ScalarType dtype);

// A mask (a bool tensor, or any tensor's nonzero values) -> ceil(numel/8)
// bytes, and back to bools.
at::Tensor pack_mask(const at::Tensor& mask);
at::Tensor unpack_mask(const at::Tensor& packed, at::IntArrayRef shape);

}  // namespace papaya::executor
