#pragma once
// The random source of stochastic rounding: a generator of papaya's own, so
// that quantizing draws nothing from LibTorch's default generators and
// leaves the dropout masks of a run as they would be without it.
#include <ATen/core/Generator.h>

#include <cstdint>

namespace papaya::executor {

// A CPU generator: each quantization takes one seed from it (the noise is a
// hash of that seed and each value's index, on the CPU and on CUDA alike).
at::Generator& rounding_generator();
void seed_rounding(uint64_t seed);
uint64_t next_rounding_seed();

}  // namespace papaya::executor
