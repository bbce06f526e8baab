#pragma once
// The kernels `papaya calibrate` times on a device, to fit the kernel model
// (model/catalog/calibration.h): products of bf16 and fp32 (TF32 off) from
// square to skinny, causal fused attention forward and backward (LibTorch
// 2.x's scaled_dot_product_attention; not on LibTorch 1.13), copies from
// 1 MiB to 1 GiB, and a one-element kernel. Each is warmed up, then timed
// over repetitions (the device synchronized around them); its median kept.
#include <torch/torch.h>

#include <functional>
#include <vector>

#include "model/catalog/calibration.h"
#include "model/profile.h"

namespace papaya::profiler {

struct SweepSize {
  // The products' largest side and the copies' largest size: a GPU's sweep
  // takes its default; a test's on a CPU, tiny ones.
  int64_t largest_side = 8192;
  double largest_copy_bytes = 1024.0 * 1024 * 1024;
  int64_t attention_tokens = 4096;
  int repetitions = 10;
};

// The device as a catalog lookup sees it (model::catalog_entry_for).
model::MachineInfo device_machine(const torch::Device& device);

// The kernels of a sweep, in the order they run.
std::vector<model::KernelMeasurement> planned_sweep(const SweepSize& size);

// Times each of `planned` on `device`; `progress(done, total)` after each.
std::vector<model::KernelMeasurement> run_sweep(const torch::Device& device, std::vector<model::KernelMeasurement> planned,
                                                const SweepSize& size, const std::function<void(int, int)>& progress);

}  // namespace papaya::profiler
