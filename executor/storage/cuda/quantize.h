#pragma once
/* Fused CUDA kernels for the quantized layout of executor/storage/codec.h:
 * groups of `group_size` values that never cross a head (heads of
 * `head_numel` values, each padded with zeros to whole groups), a bf16 min
 * (rounded down) and scale (rounded up) per group, codes by stochastic
 * rounding against them, `bits` per code packed into bytes with the first
 * code in the lowest bits:
 *   [groups x group_size*bits/8 code bytes][groups x bf16 min][groups x bf16 scale]
 * A torch-free C interface (raw pointers, sizes, a stream) so that the
 * kernels compile wherever nvcc is found. group_size must be a multiple of 32.
 * Each returns the error of its launch (cudaSuccess once queued). */
#include <cuda_runtime_api.h>
#include <stdint.h>

#include "executor/storage/cuda/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* x: numel values of `dtype`; out: the buffer. The rounding noise is a hash
 * of (seed, value index): a new seed per call. */
cudaError_t papaya_quantize(const void* x, int dtype, int64_t numel, int64_t head_numel, int group_size, int bits, uint64_t seed,
                            uint8_t* out, cudaStream_t stream);

/* in: the buffer; out: numel values of `dtype`. */
cudaError_t papaya_dequantize(const uint8_t* in, int64_t numel, int64_t head_numel, int group_size, int bits, void* out,
                              int dtype, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
