#include "executor/random_state.h"

#include <ATen/CPUGeneratorImpl.h>

#include <mutex>

#ifdef PAPAYA_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

namespace papaya::executor {

at::Tensor generator_state(at::Generator generator) {
  const std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void set_generator_state(at::Generator generator, const at::Tensor& state) {
  const std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

RandomState RandomState::capture(const at::Device& device) {
  RandomState s;
  s.device = device;
  s.cpu = generator_state(at::detail::getDefaultCPUGenerator());
#ifdef PAPAYA_CUDA
  if (device.is_cuda()) s.cuda = generator_state(at::cuda::detail::getDefaultCUDAGenerator(device.index()));
#endif
  return s;
}

void RandomState::restore() const {
  set_generator_state(at::detail::getDefaultCPUGenerator(), cpu);
#ifdef PAPAYA_CUDA
  if (cuda.defined()) set_generator_state(at::cuda::detail::getDefaultCUDAGenerator(device.index()), cuda);
#endif
}

}  // namespace papaya::executor
