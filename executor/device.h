#pragma once
// The device a run asks for, checked against this build and machine.
#include <torch/torch.h>

#include <string>

namespace papaya::executor {

// "cpu", "cuda" or "cuda:N". Throws InputError if CUDA is asked for and this
// build has no CUDA LibTorch, or the machine has no such GPU.
torch::Device resolve_device(const std::string& name);

// What a run profiles on when none is named: "cuda" where a CUDA GPU is
// visible to this build, else "cpu".
std::string default_device();

// Waits for the device's queued work (a no-op on CPU).
void synchronize(const torch::Device& device);

// "Intel(R) Xeon(R) ... (2 threads)" or "NVIDIA H100 80GB HBM3".
std::string device_name(const torch::Device& device);

}  // namespace papaya::executor
