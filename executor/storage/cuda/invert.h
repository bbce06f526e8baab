#pragma once
/* The fused CUDA kernel of an inverted GELU/SiLU's backward (invert.h): the
 * input's gradient from the output, the branch bit and the derivative table
 * (invert_math.h), in one pass. A torch-free C interface, as quantize.h.
 * Returns the error of its launch (cudaSuccess once queued). */
#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stdint.h>

#include "executor/storage/cuda/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* grad, output, out: n values of `dtype`; right: n bools; table: on the
 * device, 2 x (table_size + 1) floats, right branch then left. */
cudaError_t papaya_invert_backward(const void* grad, const void* output, const bool* right, int dtype, int64_t n,
                                   const float* table, int table_size, float y_min, float right_scale, float left_scale,
                                   void* out, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
