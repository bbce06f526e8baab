// On a CUDA device: QLoRA's stored weights (executor/storage/weight_codec.h)
// coded and loaded on the GPU as on the CPU, and a network with an nf4 base
// trained there as on the CPU. Skipped without one.
#include <gtest/gtest.h>

#include "executor/data.h"
#include "executor/networks/zoo.h"
#include "executor/storage/weight_codec.h"
#include "tests/executor/moms_fixture.h"

namespace papaya::executor {
namespace {

using model::WeightFormat;

StoredWeight on_cpu(StoredWeight stored) {
  for (auto& [name, tensor] : stored.tensors()) *tensor = tensor->cpu();
  return stored;
}

// The same codes from the same weight; the GPU's absmax mean may round
// otherwise than the CPU's, so an absmax code may move by one. Loaded on the
// GPU, the stored weight is what the CPU loads from the same bytes. 17,188
// blocks: the GPU loads them in two chunks.
TEST(CudaQlora, StoresAndLoadsAsTheCpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  torch::manual_seed(5);
  const torch::Tensor w = torch::randn({1100, 1000});
  for (WeightFormat format : {WeightFormat::bf16, WeightFormat::int8, WeightFormat::nf4}) {
    const StoredWeight gpu = store_weight(w.cuda(), format), cpu = store_weight(w, format);
    EXPECT_EQ(gpu.bytes(), cpu.bytes()) << to_string(format);
    const StoredWeight back = on_cpu(gpu);
    EXPECT_TRUE(torch::equal(back.codes, cpu.codes)) << to_string(format);
    if (cpu.scales.defined()) {
      EXPECT_LE((back.scales.to(torch::kInt) - cpu.scales.to(torch::kInt)).abs().max().item<int>(), 1) << to_string(format);
    }
    const torch::Tensor loaded = load_weight(gpu, torch::kFloat).cpu(), expected = load_weight(back, torch::kFloat);
    ASSERT_EQ(loaded.sizes(), w.sizes());
    EXPECT_LE((loaded - expected).abs().max().item<double>(), 1e-6 * w.abs().max().item<double>()) << to_string(format);
    EXPECT_EQ(load_weight(gpu, torch::kBFloat16).scalar_type(), torch::kBFloat16);
  }
}

model::NetworkConfig nf4_llama() {
  model::NetworkConfig config = model::load_network_config("llama-tiny-lora");
  model::LoraConfig lora = *config.transformer().lora;
  lora.base_weights = WeightFormat::nf4;
  lora.dropout = 0;  // the CPU's and the GPU's generators draw other masks
  return model::with_lora(config, lora);
}

testing::Step step_on(const model::NetworkConfig& config, torch::Device device) {
  torch::manual_seed(0);
  auto network = build_network(config);
  {
    const torch::NoGradGuard no_grad;  // B non-zero, so that A has gradients
    for (auto& param : network->named_parameters()) {
      if (param.key().find("_lora_b") != std::string::npos) param.value().normal_(0, 0.1);
    }
  }
  network->to(device);
  const Batch batch = make_synthetic_data(config, device, 1)->next(3);
  testing::Step step = testing::step(*network, batch);
  for (auto& [name, grad] : step.grads) grad = grad.cpu();
  return step;
}

// The nf4 network's adapter gradients on the GPU move from the CPU's no more
// than the fp32 network's move between the two devices (the matmuls' own
// rounding), with room for the loaded weights' last bit.
TEST(CudaQlora, TrainsAsOnTheCpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const model::NetworkConfig nf4 = nf4_llama();
  const model::NetworkConfig fp32 = model::with_lora(nf4, [&] {
    model::LoraConfig lora = *nf4.transformer().lora;
    lora.base_weights = WeightFormat::fp32;
    return lora;
  }());
  const double fp32_moves = testing::relative_error(step_on(fp32, torch::kCUDA), step_on(fp32, torch::kCPU));
  const testing::Step gpu = step_on(nf4, torch::kCUDA), cpu = step_on(nf4, torch::kCPU);
  EXPECT_TRUE(std::isfinite(gpu.loss));
  EXPECT_NEAR(gpu.loss, cpu.loss, 1e-4 * std::fabs(cpu.loss));
  EXPECT_LE(testing::relative_error(gpu, cpu), 4 * fp32_moves + 1e-6) << "fp32 moves " << fp32_moves;
}

}  // namespace
}  // namespace papaya::executor
