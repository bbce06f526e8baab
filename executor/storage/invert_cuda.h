#pragma once
// The inverted backward on CUDA tensors: the fused kernel of cuda/invert.cu
// (CUDA builds only), computing what the CPU loop computes (invert_math.h).
#include <ATen/ATen.h>

#include "executor/storage/invert_math.h"

namespace papaya::executor {

// `table.values` on grad's device.
at::Tensor input_grad_cuda(const invert::DerivativeTable& table, const at::Tensor& grad, const at::Tensor& output,
                           const at::Tensor& right);

}  // namespace papaya::executor
