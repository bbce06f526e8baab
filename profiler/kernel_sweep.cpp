#include "profiler/kernel_sweep.h"

#include <algorithm>
#include <array>
#include <chrono>

#include "executor/device.h"
#include "model/median.h"
#ifdef PAPAYA_CUDA
#include "profiler/cuda_device.h"
#endif

namespace papaya::profiler {
namespace {

using model::KernelClass;
using model::KernelMeasurement;

constexpr int tiny_launches = 200;  // one timing of the tiny kernel covers this many
#if TORCH_VERSION_MAJOR >= 2
constexpr int64_t attention_heads = 16, attention_batch = 2, attention_head_dim = 128;
#endif

// The median seconds of `run` over `repetitions`, after two calls to warm up.
template <class Run>
double timed(const torch::Device& device, int repetitions, const Run& run) {
  run();
  run();
  std::vector<double> seconds;
  for (int i = 0; i < repetitions; ++i) {
    executor::synchronize(device);
    const auto start = std::chrono::steady_clock::now();
    run();
    executor::synchronize(device);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return model::median(seconds);
}

torch::ScalarType dtype_of(const std::string& path) { return path == "fp32" ? torch::kFloat32 : torch::kBFloat16; }

double time_product(const torch::Device& device, const KernelMeasurement& m, int repetitions) {
  const auto options = torch::TensorOptions().device(device).dtype(dtype_of(m.path));
  const torch::Tensor a = torch::randn({static_cast<int64_t>(m.m), static_cast<int64_t>(m.k)}, options);
  const torch::Tensor b = torch::randn({static_cast<int64_t>(m.k), static_cast<int64_t>(m.n)}, options);
  torch::Tensor c = torch::empty({static_cast<int64_t>(m.m), static_cast<int64_t>(m.n)}, options);
  return timed(device, repetitions, [&] { torch::mm_out(c, a, b); });
}

double time_copy(const torch::Device& device, const KernelMeasurement& m, int repetitions) {
  const auto elements = static_cast<int64_t>(m.bytes / 2 / sizeof(float));  // read once, written once
  const torch::Tensor from = torch::ones({elements}, torch::TensorOptions().device(device));
  torch::Tensor to = torch::empty_like(from);
  return timed(device, repetitions, [&] { to.copy_(from); });
}

double time_tiny(const torch::Device& device, int repetitions) {
  torch::Tensor x = torch::zeros({1}, torch::TensorOptions().device(device));
  return timed(device, repetitions,
               [&] {
                 for (int i = 0; i < tiny_launches; ++i) x.add_(1);
               }) /
         tiny_launches;
}

#if TORCH_VERSION_MAJOR >= 2
// Causal attention over (batch, heads, tokens, head_dim) bf16: its forward,
// or its backward (forward and backward, less the forward's median).
double time_attention(const torch::Device& device, const KernelMeasurement& m, int repetitions) {
  const auto options = torch::TensorOptions().device(device).dtype(torch::kBFloat16);
  const std::vector<int64_t> shape = {attention_batch, attention_heads, static_cast<int64_t>(m.tokens), attention_head_dim};
  torch::Tensor q = torch::randn(shape, options).requires_grad_(), k = torch::randn(shape, options).requires_grad_(),
                v = torch::randn(shape, options).requires_grad_();
  const torch::Tensor grad = torch::randn(shape, options);
  const auto forward = [&] { return at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true); };
  const double forward_s = timed(device, repetitions, [&] {
    torch::NoGradGuard no_grad;
    forward();
  });
  if (m.kind == KernelClass::attention_forward) return forward_s;
  const double both = timed(device, repetitions, [&] {
    forward().backward(grad);
    for (torch::Tensor* t : {&q, &k, &v}) t->mutable_grad().reset();
  });
  return std::max(both - forward_s, 0.0);
}
#endif

}  // namespace

model::MachineInfo device_machine(const torch::Device& device) {
  model::MachineInfo m;
  m.device = device.str();
  m.device_name = executor::device_name(device);
#ifdef PAPAYA_CUDA
  if (device.is_cuda()) m.memory_bytes = cuda_memory_bytes(device.index());
#endif
  m.torch_version = TORCH_VERSION;
  return m;
}

std::vector<KernelMeasurement> planned_sweep(const SweepSize& size) {
  std::vector<KernelMeasurement> planned;
  planned.push_back({KernelClass::tiny});
  for (double bytes = 2.0 * (1 << 20); bytes <= 2 * size.largest_copy_bytes; bytes *= 4) {
    KernelMeasurement m{KernelClass::memory_pass};
    m.bytes = bytes;
    planned.push_back(m);
  }
  const double l = static_cast<double>(size.largest_side);
  for (const char* path : {"bf16", "fp32"}) {
    std::vector<std::array<double, 3>> shapes;
    for (double side = std::min(512.0, l); side <= l; side *= 2) shapes.push_back({side, side, side});
    // Skinny and deep: few tiles, or a short k.
    shapes.push_back({l, l, std::max(1.0, l / 32)});
    shapes.push_back({std::max(1.0, l / 32), l, l});
    shapes.push_back({l, std::max(1.0, l / 8), l});
    for (const auto& [m, n, k] : shapes) {
      KernelMeasurement p{KernelClass::matmul, path};
      p.m = m, p.n = n, p.k = k;
      planned.push_back(p);
    }
  }
#if TORCH_VERSION_MAJOR >= 2
  for (KernelClass kind : {KernelClass::attention_forward, KernelClass::attention_backward}) {
    for (int64_t tokens = std::min<int64_t>(512, size.attention_tokens); tokens <= size.attention_tokens; tokens *= 2) {
      KernelMeasurement a{kind, "bf16"};
      a.batch_heads = attention_batch * attention_heads, a.tokens = static_cast<double>(tokens);
      a.head_dim = attention_head_dim;
      planned.push_back(a);
    }
  }
#endif
  return planned;
}

std::vector<KernelMeasurement> run_sweep(const torch::Device& device, std::vector<KernelMeasurement> planned,
                                         const SweepSize& size, const std::function<void(int, int)>& progress) {
  // fp32 products as fp32: TF32 is a path of its own.
  at::globalContext().setAllowTF32CuBLAS(false);
  torch::NoGradGuard no_grad_outside_attention;
  int done = 0;
  for (KernelMeasurement& m : planned) {
    switch (m.kind) {
      case KernelClass::tiny: m.seconds = time_tiny(device, size.repetitions); break;
      case KernelClass::memory_pass: m.seconds = time_copy(device, m, size.repetitions); break;
      case KernelClass::matmul: m.seconds = time_product(device, m, size.repetitions); break;
      case KernelClass::attention_forward:
      case KernelClass::attention_backward: {
#if TORCH_VERSION_MAJOR >= 2
        torch::AutoGradMode grad(true);
        m.seconds = time_attention(device, m, size.repetitions);
#endif
        break;
      }
    }
    progress(++done, static_cast<int>(planned.size()));
  }
  return planned;
}

}  // namespace papaya::profiler
