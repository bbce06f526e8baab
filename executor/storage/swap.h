#pragma once
// Swapping (CUDA builds only): a stored payload is copied to pinned host
// memory on a side stream while compute goes on, its device memory released
// once the copy has run, and fetched back ahead of its use in backward.
#include <ATen/ATen.h>

#include <memory>

namespace papaya::executor {

class HostCopy;

// Starts copying `payload` (a CUDA tensor) to pinned host memory after the
// work queued so far on the current stream.
std::shared_ptr<HostCopy> swap_out(const at::Tensor& payload);

// The payload back on the device, usable on the current stream (which waits
// for its copy, and only for it). Starts fetching the tensors swapped out
// just before it, which backward needs next.
at::Tensor swap_in(const std::shared_ptr<HostCopy>& copy);

}  // namespace papaya::executor
