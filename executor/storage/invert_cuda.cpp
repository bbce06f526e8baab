#include "executor/storage/invert_cuda.h"

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "executor/storage/cuda/invert.h"

namespace papaya::executor {

at::Tensor input_grad_cuda(const invert::DerivativeTable& table, const at::Tensor& grad, const at::Tensor& output,
                           const at::Tensor& right) {
  const c10::cuda::CUDAGuard guard(grad.device());
  // The kernel reads and writes fp32 and bf16; other dtypes go through fp32.
  const at::ScalarType dtype = grad.scalar_type() == at::kBFloat16 ? at::kBFloat16 : at::kFloat;
  const at::Tensor g = grad.to(dtype).contiguous(), y = output.to(dtype).contiguous(), branch = right.to(at::kBool).contiguous();
  at::Tensor out = at::empty_like(g);
  C10_CUDA_CHECK(papaya_invert_backward(g.data_ptr(), y.data_ptr(), branch.data_ptr<bool>(),
                                        dtype == at::kBFloat16 ? papaya_bfloat16 : papaya_float32, g.numel(), table.values,
                                        table.size, table.y_min, table.right_scale, table.left_scale, out.data_ptr(),
                                        c10::cuda::getCurrentCUDAStream(grad.device().index()).stream()));
  return out.to(grad.scalar_type());
}

}  // namespace papaya::executor
