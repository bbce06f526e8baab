#include "profiler/host_link.h"

#include <chrono>

#include "executor/device.h"

namespace papaya::profiler {
namespace {

// Bytes per second of copying `from` into `to`, over `repeats` copies.
double copy_rate(torch::Tensor& to, const torch::Tensor& from, const torch::Device& device, int repeats) {
  to.copy_(from, /*non_blocking=*/true);  // warm-up
  executor::synchronize(device);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) to.copy_(from, /*non_blocking=*/true);
  executor::synchronize(device);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(from.nbytes()) * repeats / seconds;
}

}  // namespace

HostLink measure_host_link(const torch::Device& device) {
  constexpr int64_t bytes = 64LL << 20;
  constexpr int repeats = 5;
  torch::Tensor host = torch::empty({bytes}, torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true));
  torch::Tensor on_device = torch::empty({bytes}, torch::TensorOptions().dtype(torch::kUInt8).device(device));
  HostLink link;
  link.h2d_bytes_per_s = copy_rate(on_device, host, device, repeats);
  link.d2h_bytes_per_s = copy_rate(host, on_device, device, repeats);
  return link;
}

}  // namespace papaya::profiler
