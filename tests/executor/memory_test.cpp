#include <gtest/gtest.h>

#include <torch/torch.h>
#include "executor/memory.h"

namespace papaya::executor {
namespace {

TEST(MemoryTracker, CountsCpuAllocationsAndFrees) {
  MemoryTracker memory(torch::kCPU);
  const int64_t before = memory.current();
  {
    const torch::Tensor t = torch::empty({1 << 18}, torch::kFloat);  // 1 MiB
    EXPECT_EQ(memory.current() - before, 1 << 20);
  }
  EXPECT_EQ(memory.current(), before);
  EXPECT_GE(memory.peak(), before + (1 << 20));
  memory.reset_peak();
  EXPECT_EQ(memory.peak(), memory.current());
}

TEST(MemoryTracker, SeesAutogradSavedTensors) {
  MemoryTracker memory(torch::kCPU);
  const torch::Tensor w = torch::randn({256, 256}, torch::requires_grad());
  const int64_t before = memory.current();
  torch::Tensor x = torch::randn({64, 256});
  torch::Tensor y = torch::gelu(torch::matmul(x, w));  // keeps x and x@w for backward
  const int64_t held = memory.current() - before;
  EXPECT_EQ(held, 3 * 64 * 256 * 4);  // x, x@w (saved by gelu), y
  y.sum().backward();
}

}  // namespace
}  // namespace papaya::executor
