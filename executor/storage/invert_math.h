#pragma once
// An inverted GELU/SiLU's derivative from its output, one definition for the
// CPU loop and the CUDA kernel (invert.h says what the table holds). No
// LibTorch.
#include <math.h>

#include "executor/storage/host_device.h"

namespace papaya::executor::invert {

// The derivative tabulated per branch against s = sqrt(output - min):
// `values` holds the right branch's size + 1 entries, then the left's.
struct DerivativeTable {
  const float* values;
  int size;
  float y_min, right_scale, left_scale;  // scale: size / the branch's span of s
};

// The derivative at the input that gave `y` on the branch `right` says,
// interpolated linearly between the table's entries.
PAPAYA_HOST_DEVICE float derivative_from_output(const DerivativeTable& t, float y, bool right) {
  const float s = sqrtf(y - t.y_min > 0.f ? y - t.y_min : 0.f) * (right ? t.right_scale : t.left_scale);
  const float size = static_cast<float>(t.size);
  const float u = s < size ? s : size;
  const float cell = floorf(u) < size - 1 ? floorf(u) : size - 1;
  const float* v = t.values + static_cast<int>(cell) + (right ? 0 : t.size + 1);
  return v[0] + (v[1] - v[0]) * (u - cell);
}

}  // namespace papaya::executor::invert
