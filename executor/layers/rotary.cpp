#include "executor/layers/rotary.h"

namespace papaya::executor {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The rotated part of y = x·cos + rotate_half(x)·sin, rotate_half(x) =
// (-x2, x1), written into y's part without temporaries. With the sign of sin
// flipped it is the transposed rotation, which backward applies to the gradient.
torch::Tensor rotate(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin, int64_t dims, double sign) {
  const int64_t half = dims / 2;
  torch::Tensor y = torch::empty_like(x, at::MemoryFormat::Contiguous);
  torch::Tensor part = y.narrow(-1, 0, dims);
  torch::mul_out(part, x.narrow(-1, 0, dims), cos);
  part.narrow(-1, 0, half).addcmul_(x.narrow(-1, half, half), sin.narrow(-1, 0, half), -sign);
  part.narrow(-1, half, half).addcmul_(x.narrow(-1, 0, half), sin.narrow(-1, half, half), sign);
  const int64_t rest = x.size(-1) - dims;
  if (rest > 0) y.narrow(-1, dims, rest).copy_(x.narrow(-1, dims, rest));
  return y;
}

struct RotaryFunction : torch::autograd::Function<RotaryFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                            int64_t dims) {
    ctx->save_for_backward({cos, sin});
    ctx->saved_data["dims"] = dims;
    return rotate(x, cos, sin, dims, 1.0);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto tables = ctx->get_saved_variables();
    const int64_t dims = ctx->saved_data["dims"].toInt();
    return {rotate(grad[0], tables[0], tables[1], dims, -1.0), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

Rotary::Rotary(int64_t dims, double base, std::shared_ptr<SequenceTables> tables, model::RopeScaling scaling)
    : Layer(LayerKind::rotary, {}), dims(dims), base(base), scaling(std::move(scaling)), tables_(std::move(tables)) {}

torch::Tensor Rotary::forward(torch::Tensor x) {
  Scope scope(*this, {&x});
  const auto [cos, sin] = tables_->rotary(x.size(-2), dims, base, scaling, x.device(), x.scalar_type());
  return scope.finish(RotaryFunction::apply(x, cos, sin, dims));
}

}  // namespace papaya::executor
