// On a CUDA device: the fused kernels against the ATen path, and swapping
// (gradients exact, memory released). Skipped without one.
#include <gtest/gtest.h>

#include "executor/data.h"
#include "executor/layout_probe.h"
#include "executor/networks/zoo.h"
#include "executor/storage/codec.h"
#include "executor/storage/invert.h"
#include "executor/storage/rounding.h"
#include "executor/storage/stored_bytes.h"
#include "model/plan.h"
#include "tests/executor/moms_fixture.h"

namespace papaya::executor {
namespace {

bool has_cuda() { return torch::cuda::is_available(); }

// The kernels and the CPU codec share their arithmetic (quant_math.h): for
// the same seed they write the same bytes, and decode a buffer identically;
// values within one step, unbiased.
TEST(CudaKernels, WriteTheCpuCodecsBytes) {
  if (!has_cuda()) GTEST_SKIP() << "no CUDA device";
  for (auto dtype : {torch::kFloat, torch::kBFloat16}) {
    for (int bits : {8, 4, 2}) {
      for (bool headwise : {false, true}) {
        const torch::Tensor x = torch::randn({3, 4, 17, 16}).to(dtype);
        const QuantLayout layout{bits, model::default_group_size(bits), x.numel(), headwise ? 17 * 16 : x.numel()};
        seed_rounding(5);
        const torch::Tensor on_gpu = quantize(x.cuda(), layout).cpu();
        seed_rounding(5);
        const torch::Tensor on_cpu = quantize(x, layout);
        EXPECT_TRUE(torch::equal(on_gpu, on_cpu)) << bits << " bits";
        const int64_t meta = layout.groups() * model::quantized_range_bytes, codes = layout.bytes() - meta;
        const torch::Tensor from_gpu = dequantize(on_gpu.cuda(), layout, x.sizes(), dtype).cpu();
        EXPECT_TRUE(torch::equal(from_gpu, dequantize(on_gpu, layout, x.sizes(), dtype))) << bits << " bits";
        const torch::Tensor scales = on_cpu.narrow(0, codes + meta / 2, meta / 2).view(torch::kBFloat16).to(torch::kFloat);
        EXPECT_LE((from_gpu.to(torch::kFloat) - x.to(torch::kFloat)).abs().max().item<double>(),
                  scales.max().item<double>() * 1.01 + (dtype == torch::kBFloat16 ? 0.05 : 0));
      }
    }
  }
  const torch::Tensor x = torch::randn({4096}, torch::kCUDA);
  const QuantLayout layout{2, 256, x.numel(), x.numel()};
  torch::Tensor sum = torch::zeros_like(x);
  for (int seed = 1; seed <= 400; ++seed) {
    seed_rounding(seed);
    sum += dequantize(quantize(x, layout), layout, x.sizes(), x.scalar_type());
  }
  EXPECT_LT((sum / 400 - x).pow(2).mean().sqrt().item<double>(), 1.0 / std::sqrt(400.0));
}

// The inverted backward's kernel computes what the CPU loop computes (the
// same table and arithmetic, invert_math.h), up to the GPU's fused
// multiply-adds: within a few float steps of the gradient.
TEST(CudaKernels, InvertedBackwardIsTheCpus) {
  if (!has_cuda()) GTEST_SKIP() << "no CUDA device";
  for (auto kind : {model::LayerKind::gelu, model::LayerKind::silu}) {
    for (auto dtype : {torch::kFloat, torch::kBFloat16}) {
      torch::manual_seed(2);
      const torch::Tensor x = (torch::randn({5, 333}) * 3).to(dtype), grad = torch::randn({5, 333}).to(dtype);
      const torch::Tensor output = kind == model::LayerKind::gelu ? torch::gelu(x) : torch::silu(x);
      const torch::Tensor right = x >= branch_point(kind);
      const torch::Tensor on_cpu = input_grad_from_output(kind, grad, output, right);
      const torch::Tensor on_gpu = input_grad_from_output(kind, grad.cuda(), output.cuda(), right.cuda()).cpu();
      ASSERT_EQ(on_gpu.scalar_type(), dtype);
      const double step = dtype == torch::kBFloat16 ? 1.0 / 128 : 1e-6;
      EXPECT_LE((on_gpu.to(torch::kFloat) - on_cpu.to(torch::kFloat)).abs().max().item<double>(),
                4 * step * grad.to(torch::kFloat).abs().max().item<double>())
          << model::to_string(kind);
    }
  }
}

// Swapped tensors come back bit for bit: the gradients are keep's (raw) and
// quantize-4's (packed), and nothing swapped stays on the device.
TEST(CudaSwap, GradientsAreExactAndNothingStaysOnTheDevice) {
  if (!has_cuda()) GTEST_SKIP() << "no CUDA device";
  const auto config = testing::tiny_config("gpt-tiny", 0.1);
  const auto on_gpu = [&](const std::string& plan) {
    torch::manual_seed(0);
    auto network = build_network(config);
    network->to(torch::kCUDA);
    const auto layout = probe_layout(*network);
    apply_plan(*network, model::load_plan(plan, layout, config.name), layout);
    return network;
  };
  const Batch batch = make_synthetic_data(config, torch::kCUDA, 1)->next(8);
  for (const auto& [plain, swapped] :
       std::vector<std::pair<std::string, std::string>>{{"keep", "swap"}, {"quantize-4", "quantize-4+swap"}}) {
    // Seeded just before each step: applying a plan seeds the rounding too.
    const auto plain_network = on_gpu(plain);
    seed_rounding(3);
    const auto exact = testing::step(*plain_network, batch);
    auto network = on_gpu(swapped);
    StoredBytesRecorder recorder;
    torch::Tensor loss;
    {
      const StoredBytesGuard guard(&recorder);
      torch::manual_seed(7);
      loss = network->loss(batch);
    }
    ASSERT_TRUE(recorder.bytes().count(swapped)) << swapped;
    EXPECT_EQ(recorder.bytes().at(swapped), 0) << swapped;
    loss = torch::Tensor();
    seed_rounding(3);
    const auto again = testing::step(*network, batch);
    EXPECT_TRUE(testing::identical(again, exact)) << swapped;
  }
}

}  // namespace
}  // namespace papaya::executor
