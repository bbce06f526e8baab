#include "executor/storage/invert.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <vector>

#include "executor/storage/cpu_isa.h"
#include "executor/storage/invert_math.h"
#ifdef PAPAYA_CUDA
#include "executor/storage/invert_cuda.h"
#endif

namespace papaya::executor {
namespace {

constexpr int table_size = 2048;  // intervals per branch
constexpr double top = 20;        // above this output both derivatives are 1 in fp32
constexpr int64_t chunk_values = int64_t{1} << 13;

struct Activation {
  double (*value)(double);
  double (*derivative)(double);
};

double gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double gelu_derivative(double x) {
  return 0.5 * (1 + std::erf(x / std::sqrt(2.0))) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
}
double silu(double x) { return x / (1 + std::exp(-x)); }
double silu_derivative(double x) {
  const double s = 1 / (1 + std::exp(-x));
  return s * (1 + x * (1 - s));
}

Activation activation(model::LayerKind kind) {
  TORCH_CHECK(model::traits(kind).invertible_input, "no inverted form of ", model::to_string(kind));
  return kind == model::LayerKind::gelu ? Activation{gelu, gelu_derivative} : Activation{silu, silu_derivative};
}

// The derivative's zero, by bisection.
double minimum_of(const Activation& a) {
  double lo = -3, hi = 0;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    (a.derivative(mid) < 0 ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

// The input in [lo, hi], on which the activation is monotonic, that gives y.
double inverse(const Activation& a, double y, double lo, double hi, bool increasing) {
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    ((a.value(mid) < y) == increasing ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

struct Table {
  double x0, y_min, right_span, left_span;
  // (2, table_size + 1): right branch, left branch. Host data rather than a
  // tensor the allocator gives out: constant, like code, it is no part of
  // any plan's memory.
  std::vector<float> values;
  // A tensor over the host data (copied to a GPU once, table_on).
  at::Tensor view() const { return at::from_blob(const_cast<float*>(values.data()), {2, table_size + 1}, at::kFloat); }
};

Table build(model::LayerKind kind) {
  const Activation a = activation(kind);
  Table t;
  t.x0 = minimum_of(a);
  t.y_min = a.value(t.x0);
  t.right_span = std::sqrt(top - t.y_min);
  t.left_span = std::sqrt(-t.y_min);
  t.values.resize(2 * (table_size + 1));
  float* right = t.values.data();
  float* left = right + table_size + 1;
  for (int i = 0; i <= table_size; ++i) {
    const double sr = t.right_span * i / table_size, sl = t.left_span * i / table_size;
    right[i] = static_cast<float>(a.derivative(inverse(a, t.y_min + sr * sr, t.x0, top + 1, true)));
    // The left branch ends at output 0, reached as the input goes to -infinity.
    left[i] = i == table_size ? 0.f : static_cast<float>(a.derivative(inverse(a, t.y_min + sl * sl, -60, t.x0, false)));
  }
  return t;
}

const Table& table(model::LayerKind kind) {
  static const Table gelu_table = build(model::LayerKind::gelu), silu_table = build(model::LayerKind::silu);
  return kind == model::LayerKind::gelu ? gelu_table : silu_table;
}

#ifdef PAPAYA_CUDA
// The table on a GPU: a copy made once per device.
at::Tensor table_on(model::LayerKind kind, const at::Device& device) {
  static std::mutex mutex;
  static std::map<std::pair<model::LayerKind, std::string>, at::Tensor> copies;
  const std::lock_guard<std::mutex> lock(mutex);
  at::Tensor& copy = copies[{kind, device.str()}];
  if (!copy.defined()) copy = table(kind).view().to(device);
  return copy;
}
#endif

invert::DerivativeTable derivative_table(const Table& t, const float* values) {
  return {values, table_size, static_cast<float>(t.y_min), static_cast<float>(table_size / t.right_span),
          static_cast<float>(table_size / t.left_span)};
}

// The derivative times the incoming gradient over values [begin, end), in a
// loop that AVX2 vectorizes, gathering the table's entries (the baseline's
// SSE2 has no gather). The AVX-512 level runs the AVX2 loop: 16-lane
// gathers were the slower on the AMD EPYC (Zen 4) measured, bench/RESULTS.md.
// The pointers are parameters: clang takes __restrict from parameters only.
template <typename T>
PAPAYA_CPU_KERNEL void input_grad_range(const invert::DerivativeTable table, const T* __restrict grad, const T* __restrict output,
                                        const bool* __restrict right, T* __restrict out, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    out[i] = static_cast<T>(invert::derivative_from_output(table, static_cast<float>(output[i]), right[i]) *
                            static_cast<float>(grad[i]));
  }
}

// input_grad_range at the baseline and at AVX2 (cpu_isa.h).
template <typename T>
void input_grad_range_baseline(const invert::DerivativeTable& table, const T* grad, const T* output, const bool* right, T* out,
                               int64_t begin, int64_t end) {
  input_grad_range(table, grad, output, right, out, begin, end);
}
template <typename T>
PAPAYA_TARGET_AVX2 void input_grad_range_avx2(const invert::DerivativeTable& table, const T* grad, const T* output,
                                              const bool* right, T* out, int64_t begin, int64_t end) {
  input_grad_range(table, grad, output, right, out, begin, end);
}

// On the CPU: one pass over the values, nothing allocated but the result.
at::Tensor input_grad_on_cpu(const Table& t, const at::Tensor& grad, const at::Tensor& output, const at::Tensor& right) {
  const at::Tensor g = grad.contiguous(), y = output.to(grad.scalar_type()).contiguous(),
                   branch = right.to(at::kBool).contiguous();
  at::Tensor out = at::empty_like(g);
  const invert::DerivativeTable table = derivative_table(t, t.values.data());
  const cpu_isa::Level level = cpu_isa::level();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, g.scalar_type(), "input_grad_from_output", [&] {
    const scalar_t* gp = g.data_ptr<scalar_t>();
    const scalar_t* yp = y.data_ptr<scalar_t>();
    const bool* rp = branch.data_ptr<bool>();
    scalar_t* op = out.data_ptr<scalar_t>();
    at::parallel_for(0, g.numel(), chunk_values, [&](int64_t begin, int64_t end) {
      switch (level) {
        case cpu_isa::Level::avx512:
        case cpu_isa::Level::avx2: input_grad_range_avx2(table, gp, yp, rp, op, begin, end); return;
        case cpu_isa::Level::baseline: input_grad_range_baseline(table, gp, yp, rp, op, begin, end); return;
      }
    });
  });
  return out;
}

// grad where the mask is true, else 0, over [begin, end); every value read,
// so that the loop vectorizes.
template <typename T>
void masked_range(const T* __restrict grad, const bool* __restrict mask, T* __restrict out, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    const T g = grad[i];
    out[i] = mask[i] ? g : T(0);
  }
}

}  // namespace

double branch_point(model::LayerKind kind) {
  activation(kind);
  return table(kind).x0;
}

at::Tensor input_grad_from_output(model::LayerKind kind, const at::Tensor& grad, const at::Tensor& output,
                                  const at::Tensor& right) {
  const Table& t = table(kind);
  if (grad.device().is_cpu()) return input_grad_on_cpu(t, grad, output, right);
#ifdef PAPAYA_CUDA
  if (grad.is_cuda()) {
    const at::Tensor values = table_on(kind, grad.device());
    return input_grad_cuda(derivative_table(t, values.data_ptr<float>()), grad, output, right);
  }
#endif
  TORCH_CHECK(false, "inverted activations run on the CPU or a CUDA device, not on ", grad.device());
}

at::Tensor input_grad_from_mask(const at::Tensor& grad, const at::Tensor& positive) {
  if (!grad.device().is_cpu()) return at::where(positive, grad, at::Scalar(0.0));
  const at::Tensor g = grad.contiguous(), mask = positive.to(at::kBool).contiguous();
  at::Tensor out = at::empty_like(g);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, g.scalar_type(), "input_grad_from_mask", [&] {
    const scalar_t* gp = g.data_ptr<scalar_t>();
    const bool* mp = mask.data_ptr<bool>();
    scalar_t* op = out.data_ptr<scalar_t>();
    at::parallel_for(0, g.numel(), chunk_values, [&](int64_t begin, int64_t end) { masked_range(gp, mp, op, begin, end); });
  });
  return out;
}

}  // namespace papaya::executor
