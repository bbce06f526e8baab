#include "executor/device.h"

#include <fstream>

#include "model/error.h"

#ifdef PAPAYA_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace papaya::executor {

torch::Device resolve_device(const std::string& name) {
  if (name == "cpu") return torch::Device(torch::kCPU);
  if (name.rfind("cuda", 0) != 0) throw InputError("device " + name + ": expected cpu, cuda or cuda:N");
#ifndef PAPAYA_CUDA
  throw InputError("device " + name + ": this papaya is built with a CPU-only LibTorch; rebuild against a CUDA LibTorch");
#else
  torch::Device device(torch::kCUDA);
  try {
    device = torch::Device(name);
  } catch (const std::exception&) {
    throw InputError("device " + name + ": expected cpu, cuda or cuda:N");
  }
  const int64_t count = torch::cuda::device_count();
  if (count == 0) throw InputError("device " + name + ": no CUDA GPU is visible on this machine");
  if (device.has_index() && device.index() >= count) {
    throw InputError("device " + name + ": only " + std::to_string(count) + " CUDA GPU(s) visible");
  }
  if (!device.has_index()) device = torch::Device(torch::kCUDA, 0);
  return device;
#endif
}

std::string default_device() { return torch::cuda::is_available() ? "cuda" : "cpu"; }

void synchronize(const torch::Device& device) {
#ifdef PAPAYA_CUDA
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
#else
  (void)device;
#endif
}

std::string device_name(const torch::Device& device) {
#ifdef PAPAYA_CUDA
  if (device.is_cuda()) return at::cuda::getDeviceProperties(device.index())->name;
#else
  (void)device;
#endif
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, name = "CPU";
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      name = line.substr(line.find(':') + 2);
      break;
    }
  }
  const int threads = torch::get_num_threads();
  return name + " (" + std::to_string(threads) + (threads == 1 ? " thread)" : " threads)");
}

}  // namespace papaya::executor
