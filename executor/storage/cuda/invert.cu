#include <cuda_bf16.h>

#include "executor/storage/cuda/invert.h"
#include "executor/storage/invert_math.h"

namespace {

constexpr int threads = 256;

namespace invert = papaya::executor::invert;

__device__ float load(const void* x, int dtype, int64_t i) {
  return dtype == papaya_bfloat16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(x)[i]) : static_cast<const float*>(x)[i];
}

__global__ void input_grad(const void* grad, const void* output, const bool* right, int dtype, int64_t n,
                           invert::DerivativeTable table, void* out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float g = invert::derivative_from_output(table, load(output, dtype, i), right[i]) * load(grad, dtype, i);
    if (dtype == papaya_bfloat16) {
      static_cast<__nv_bfloat16*>(out)[i] = __float2bfloat16_rn(g);
    } else {
      static_cast<float*>(out)[i] = g;
    }
  }
}

}  // namespace

extern "C" cudaError_t papaya_invert_backward(const void* grad, const void* output, const bool* right, int dtype, int64_t n,
                                              const float* table, int table_size, float y_min, float right_scale,
                                              float left_scale, void* out, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const int64_t blocks = (n + threads - 1) / threads;
  input_grad<<<static_cast<unsigned>(blocks < 65535 * 16 ? blocks : 65535 * 16), threads, 0, stream>>>(
      grad, output, right, dtype, n, {table, table_size, y_min, right_scale, left_scale}, out);
  return cudaGetLastError();
}
