// The executor's layers save what model/layer_kind.cpp says their kind saves:
// the performance model and the planner read the table, the layers declare
// their slots, and the two must not drift.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <vector>

#include "executor/layers/attention.h"
#include "executor/layers/clamped_swiglu.h"
#include "executor/layers/conv.h"
#include "executor/layers/dense.h"
#include "executor/layers/elementwise.h"
#include "executor/layers/fused_attention.h"
#include "executor/layers/loss.h"
#include "executor/layers/norm.h"
#include "executor/layers/rotary.h"

namespace papaya::executor {
namespace {

TEST(LayerKinds, EveryLayerSavesWhatItsKindSays) {
  const std::vector<std::shared_ptr<Layer>> layers = {
      std::make_shared<Linear>(4, 4),
      std::make_shared<Embedding>(10, 4),
      std::make_shared<PositionEmbedding>(8, 4),
      std::make_shared<ClassToken>(4),
      std::make_shared<Conv2d>(3, 4, 3, 1, 1),
      std::make_shared<MaxPool2d>(3, 2, 1),
      std::make_shared<GlobalAvgPool>(),
      std::make_shared<BatchNorm2d>(4),
      std::make_shared<Norm>("layernorm", 4),
      std::make_shared<Norm>("rmsnorm", 4),
      std::make_shared<Activation>("gelu"),
      std::make_shared<Activation>("silu"),
      std::make_shared<Activation>("relu"),
      std::make_shared<Activation>("tanh"),
      std::make_shared<Activation>("sigmoid"),
      std::make_shared<TokenTypeEmbedding>(2, 4),
      std::make_shared<Dropout>(0.1),
      std::make_shared<Mul>(),
      std::make_shared<ClampedSwiGlu>(1.702, 7.0),
      std::make_shared<Rotary>(8, 10000, std::make_shared<SequenceTables>()),
      std::make_shared<AttentionScores>(8, true, std::make_shared<SequenceTables>()),
      std::make_shared<Softmax>(),
      std::make_shared<AttentionContext>(),
      std::make_shared<FusedAttention>(8, true, 0.1),
      std::make_shared<CrossEntropy>(),
      std::make_shared<LMHead>(torch::randn({10, 4})),
  };
  std::set<LayerKind> seen;
  for (const auto& layer : layers) {
    const char* name = model::to_string(layer->kind());
    seen.insert(layer->kind());
    const auto& expected = model::traits(layer->kind()).slots;
    ASSERT_EQ(layer->slots().size(), expected.size()) << name;
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(layer->slots()[i].name, expected[i].name) << name;
      EXPECT_EQ(layer->slots()[i].kind, expected[i].kind) << name << " " << expected[i].name;
    }
  }
  // An imported module's slots are what it saves (torchscript/imported_network_test.cpp).
  seen.insert(LayerKind::module);
  EXPECT_EQ(seen.size(), model::layer_kinds().size()) << "a kind without a layer here";
}

}  // namespace
}  // namespace papaya::executor
