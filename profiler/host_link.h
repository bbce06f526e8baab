#pragma once
// Host-to-device and device-to-host copy bandwidth with pinned host memory:
// what swapping saved tensors to the host can count on.
#include <torch/torch.h>

namespace papaya::profiler {

struct HostLink {
  double h2d_bytes_per_s = 0, d2h_bytes_per_s = 0;
};

// A short benchmark: a 64 MiB pinned buffer copied each way a few times
// after one warm-up copy. `device` must be a CUDA device.
HostLink measure_host_link(const torch::Device& device);

}  // namespace papaya::profiler
