#pragma once
// The codec on CUDA tensors: the fused kernels of cuda/quantize.cu (CUDA
// builds only), writing the bytes the CPU codec writes for the same seed.
#include <ATen/ATen.h>

#include "executor/storage/quant_layout.h"

namespace papaya::executor {

at::Tensor quantize_cuda(const at::Tensor& x, const QuantLayout& layout);
at::Tensor dequantize_cuda(const at::Tensor& buffer, const QuantLayout& layout, at::IntArrayRef shape, at::ScalarType dtype);

}  // namespace papaya::executor
