// Dynamic loss scaling (amp-fp16): its arithmetic is the same in any type,
// so it is checked here in fp32, where a CPU can run it.
#include <gtest/gtest.h>

#include <limits>

#include "executor/data.h"
#include "executor/loss_scale.h"
#include "executor/optimizer.h"
#include "tests/executor/moms_fixture.h"

namespace papaya::executor {
namespace {

struct Trainee {
  std::shared_ptr<Network> network;
  std::unique_ptr<torch::optim::AdamW> optimizer;
};

Trainee trainee(const model::NetworkConfig& config) {
  Trainee t{testing::planned(config, "keep").network, nullptr};
  t.optimizer = make_optimizer(*t.network, 1e-3, 0.01);
  return t;
}

// Whether `scale` stepped, on `batch`.
bool scaled_step(Trainee& t, LossScale& scale, const Batch& batch) {
  t.optimizer->zero_grad();
  scale.backward(t.network->loss(batch));
  return scale.step(*t.optimizer, *t.network);
}

bool same_parameters(const Network& a, const Network& b) {
  const auto pa = a.parameters(), pb = b.parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    if (!torch::equal(pa[i], pb[i])) return false;
  }
  return true;
}

// A power-of-two scale multiplies every gradient exactly and dividing undoes
// it exactly: the same steps, bit for bit, as without scaling.
TEST(LossScale, APowerOfTwoChangesNoStep) {
  const auto config = testing::tiny_config("gpt-tiny");
  auto data = make_synthetic_data(config, torch::kCPU, 0);
  Trainee plain = trainee(config), scaled = trainee(config);
  LossScale off(false, 1, 1), on(true, 1024, 2000);
  for (int step = 0; step < 3; ++step) {
    const Batch batch = data->next(2);
    EXPECT_TRUE(scaled_step(plain, off, batch));
    EXPECT_TRUE(scaled_step(scaled, on, batch));
    EXPECT_TRUE(same_parameters(*plain.network, *scaled.network)) << "step " << step;
  }
  EXPECT_EQ(on.skipped_steps(), 0);
  EXPECT_EQ(off.value(), 1);
}

// A gradient that overflowed (as fp16 ones do past 65504) skips the step:
// the parameters stay and the scale halves. Good steps in a row double it.
TEST(LossScale, OverflowSkipsAndHalvesGoodStepsGrow) {
  const auto config = testing::tiny_config("mlp-tiny");
  auto data = make_synthetic_data(config, torch::kCPU, 0);
  Trainee t = trainee(config);
  const auto before = t.network->parameters().front().clone();
  LossScale overflowing(true, 1024, 2000);
  t.optimizer->zero_grad();
  overflowing.backward(t.network->loss(data->next(4)));
  t.network->parameters().front().mutable_grad().view(-1)[0] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(overflowing.step(*t.optimizer, *t.network));
  EXPECT_TRUE(torch::equal(t.network->parameters().front(), before));
  EXPECT_EQ(overflowing.skipped_steps(), 1);
  EXPECT_EQ(overflowing.value(), 512);

  LossScale growing(true, 4, 2);
  for (int step = 0; step < 4; ++step) EXPECT_TRUE(scaled_step(t, growing, data->next(4)));
  EXPECT_EQ(growing.value(), 16);
  EXPECT_FALSE(torch::equal(t.network->parameters().front(), before));
}

}  // namespace
}  // namespace papaya::executor
