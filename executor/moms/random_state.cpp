#include "executor/moms/random_state.h"

#include <ATen/CPUGeneratorImpl.h>

#include <mutex>

#ifdef PAPAYA_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

namespace papaya::executor {
namespace {

at::Tensor state_of(at::Generator generator) {
  const std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void set_state(at::Generator generator, const at::Tensor& state) {
  const std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

}  // namespace

RandomState RandomState::capture(const at::Device& device) {
  RandomState s;
  s.device = device;
  s.cpu = state_of(at::detail::getDefaultCPUGenerator());
#ifdef PAPAYA_CUDA
  if (device.is_cuda()) s.cuda = state_of(at::cuda::detail::getDefaultCUDAGenerator(device.index()));
#endif
  return s;
}

void RandomState::restore() const {
  set_state(at::detail::getDefaultCPUGenerator(), cpu);
#ifdef PAPAYA_CUDA
  if (cuda.defined()) set_state(at::cuda::detail::getDefaultCUDAGenerator(device.index()), cuda);
#endif
}

}  // namespace papaya::executor
