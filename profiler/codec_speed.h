#pragma once
// How fast this device packs and unpacks saved tensors with the executor's
// codec (bytes of the unpacked tensor per second, per bit width; 1 bit:
// masks) and the scratch memory it takes doing so, and how fast an inverted
// activation differentiates: what a profile records for the performance
// model to price quantization and inversion.
#include <torch/torch.h>

#include <vector>

#include "executor/memory.h"
#include "model/profile.h"

namespace papaya::profiler {

// A short benchmark: 2^20 values of `dtype`, the best of 3 runs of each
// after a warm-up, the codecs measured in turn 3 times over and each keeping
// its fastest figures (about a second on one CPU core), and 2^12 values for
// the seconds per call beyond the bytes' share; scratch from `memory`
// (which must track `device`) at 2^20 values and at 2^12.
std::vector<model::CodecMeasurement> measure_codecs(const torch::Device& device, torch::ScalarType dtype,
                                                    executor::MemoryTracker& memory);

// The same kind of benchmark for inverted GELU and SiLU: their backward from
// the output and branch bit against the activation's own, on 2^20 values.
std::vector<model::InvertMeasurement> measure_inverts(const torch::Device& device, torch::ScalarType dtype);

}  // namespace papaya::profiler
