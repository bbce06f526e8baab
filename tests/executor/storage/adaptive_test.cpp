// Adaptive bits: the allocation under a budget, and a network choosing and
// storing them.
#include <gtest/gtest.h>

#include <set>

#include "executor/data.h"
#include "executor/storage/adaptive.h"
#include "executor/storage/stored.h"
#include "executor/storage/stored_bytes.h"
#include "tests/executor/moms_fixture.h"

namespace papaya::executor {
namespace {

TEST(Adaptive, AllocationFavoursSensitiveTensorsWithinTheBudget) {
  const std::vector<int64_t> numel{1000, 1000, 1000, 1000};
  EXPECT_EQ(AdaptiveBits::allocate({100, 2, 1, 0.01}, numel, 4), (std::vector<int>{8, 4, 2, 2}));
  EXPECT_EQ(AdaptiveBits::allocate({1, 1, 1, 1}, numel, 4), (std::vector<int>{4, 4, 4, 4}));
  EXPECT_EQ(AdaptiveBits::allocate({1, 1, 1, 1}, numel, 2), (std::vector<int>{2, 2, 2, 2}));
  // A large insensitive tensor gives its bits to small sensitive ones.
  EXPECT_EQ(AdaptiveBits::allocate({1, 1, 1e-6}, {100, 100, 10000}, 3), (std::vector<int>{8, 8, 2}));
}

TEST(Adaptive, NetworkChoosesBitsWithinBudgetAndStoresThem) {
  const auto config = testing::tiny_config("gpt-tiny");
  auto p = testing::planned(config, model::load_plan("adaptive-4", testing::planned(config, "keep").layout, config.name));
  ASSERT_EQ(p.applied.adaptive().size(), 1u);
  AdaptiveBits& bits = *p.applied.adaptive()[0];
  auto data = make_synthetic_data(config, torch::kCPU, 1);
  for (int step = 0; step < 2; ++step) {
    p.applied.begin_step(step);  // step 0 estimates, step 1 applies
    testing::step(*p.network, data->next(4));
  }
  std::set<int> widths;
  double numel = 0, used = 0;
  for (size_t i = 0; i < bits.keys().size(); ++i) {
    widths.insert(bits.bits(static_cast<int>(i)));
    EXPECT_GT(bits.sensitivity(static_cast<int>(i)), 0) << bits.keys()[i];
  }
  EXPECT_GT(widths.size(), 1u) << "one width for every tensor";

  // The stored bytes are those of the chosen bits.
  StoredBytesRecorder recorder;
  {
    const StoredBytesGuard guard(&recorder);
    p.network->loss(data->next(4));
  }
  int64_t expected = 0;
  std::set<int> counted;
  for (const auto* layer : p.network->layers()) {
    for (size_t i = 0; i < layer->slots().size(); ++i) {
      const StoreSpec& spec = layer->store_spec(i);
      if (spec.strategy.form != model::Form::adaptive || !counted.insert(spec.adaptive_index).second) continue;
      const int64_t n = bits.numel(spec.adaptive_index);
      numel += static_cast<double>(n);
      used += static_cast<double>(n) * bits.bits(spec.adaptive_index);
      expected += model::device_bytes(layer->slots()[i].kind, n, 4, effective_strategy(spec));
    }
  }
  EXPECT_LE(used, 4 * numel);
  EXPECT_EQ(recorder.bytes().at("adaptive-4"), expected);
}

}  // namespace
}  // namespace papaya::executor
