#include "executor/storage/codec_cuda.h"

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "executor/storage/cuda/quantize.h"
#include "executor/storage/rounding.h"

namespace papaya::executor {
namespace {

// The kernels read and write fp32 and bf16; other dtypes go through fp32.
at::ScalarType kernel_dtype(at::ScalarType t) { return t == at::kBFloat16 ? at::kBFloat16 : at::kFloat; }
int dtype_code(at::ScalarType t) { return t == at::kBFloat16 ? papaya_bfloat16 : papaya_float32; }

}  // namespace

at::Tensor quantize_cuda(const at::Tensor& x, const QuantLayout& l) {
  const c10::cuda::CUDAGuard guard(x.device());
  const at::Tensor values = x.to(kernel_dtype(x.scalar_type())).contiguous();
  at::Tensor buffer = at::empty({l.bytes()}, x.options().dtype(at::kByte));
  C10_CUDA_CHECK(papaya_quantize(values.data_ptr(), dtype_code(values.scalar_type()), l.numel, l.head_numel, l.group_size, l.bits,
                                 next_rounding_seed(), buffer.data_ptr<uint8_t>(),
                                 c10::cuda::getCurrentCUDAStream(x.device().index()).stream()));
  return buffer;
}

at::Tensor dequantize_cuda(const at::Tensor& buffer, const QuantLayout& l, at::IntArrayRef shape, at::ScalarType dtype) {
  const c10::cuda::CUDAGuard guard(buffer.device());
  at::Tensor out = at::empty(shape, buffer.options().dtype(kernel_dtype(dtype)));
  C10_CUDA_CHECK(papaya_dequantize(buffer.data_ptr<uint8_t>(), l.numel, l.head_numel, l.group_size, l.bits, out.data_ptr(),
                                   dtype_code(out.scalar_type()),
                                   c10::cuda::getCurrentCUDAStream(buffer.device().index()).stream()));
  return out.to(dtype);
}

}  // namespace papaya::executor
