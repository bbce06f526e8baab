#pragma once
// Inverted activations (Novikov & Oseledets, 2024). A GELU or SiLU keeps its
// output (as its consumer keeps it) and one bit per element: on which side
// of the activation's minimum x0 the input was. On each side the activation
// is monotonic, so the output determines the input and the derivative. The
// derivative is tabulated per branch against s = sqrt(output - min), in
// which it is smooth up to the minimum (where it vanishes like s), and
// interpolated linearly: the error is below 2e-4, nearly all of it from the
// fp32 rounding of outputs next to the minimum (the table's own is ~1e-7).
#include <ATen/ATen.h>

#include "model/layer_kind.h"

namespace papaya::executor {

// The input at which `kind` (gelu | silu) has its minimum: the branches meet there.
double branch_point(model::LayerKind kind);

// The input's gradient, `grad` times the derivative of `kind` at the input
// that gave `output` on the branch `right` says (true where the input was
// >= branch_point). In grad's dtype.
at::Tensor input_grad_from_output(model::LayerKind kind, const at::Tensor& grad, const at::Tensor& output,
                                  const at::Tensor& right);

// A ReLU's input gradient from its mask (true where the input was positive;
// its one stored form): `grad` where the mask is true, else 0. Selected, not
// multiplied: on a CPU grad * mask would first copy the mask into grad's
// dtype, a temporary as large as the gradient. One pass on the CPU.
at::Tensor input_grad_from_mask(const at::Tensor& grad, const at::Tensor& positive);

}  // namespace papaya::executor
