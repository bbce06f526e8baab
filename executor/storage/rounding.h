#pragma once
// The random source of stochastic rounding: a generator of papaya's own, so
// that quantizing draws nothing from LibTorch's default generators and
// leaves the dropout masks of a run as they would be without it.
#include <ATen/core/Generator.h>

#include <cstdint>

namespace papaya::executor {

// A CPU generator (the CUDA kernels take their seeds from it).
at::Generator& rounding_generator();
void seed_rounding(uint64_t seed);

}  // namespace papaya::executor
