// Layer kinds: their names round trip, and a file naming a kind this papaya
// does not know is refused on one line naming the file and the kind.
#include <gtest/gtest.h>

#include <set>

#include "model/error.h"
#include "model/fit/fit_profile.h"
#include "model/layer_kind.h"
#include "tests/support/synthetic_profile.h"

namespace papaya::model {
namespace {

using nlohmann::json;

template <typename Read>
std::string error_of(Read read) {
  try {
    read();
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(LayerKind, NamesRoundTrip) {
  std::set<std::string> names;
  for (LayerKind kind : layer_kinds()) {
    EXPECT_EQ(layer_kind_from_string(to_string(kind), "here"), kind);
    names.insert(to_string(kind));
  }
  EXPECT_EQ(names.size(), layer_kinds().size());
  EXPECT_EQ(layer_kinds().size(), 26u);
  EXPECT_EQ(error_of([] { layer_kind_from_string("rope", "net.json: /layers/3/kind"); }),
            "net.json: /layers/3/kind: unknown layer kind 'rope'");
}

TEST(LayerKind, TraitsSayWhichStrategiesApply) {
  for (LayerKind kind : layer_kinds()) {
    const LayerKindTraits& t = traits(kind);
    EXPECT_EQ(t.invertible_input, kind == LayerKind::gelu || kind == LayerKind::silu) << to_string(kind);
    EXPECT_EQ(t.attention, kind == LayerKind::attention_scores || kind == LayerKind::softmax ||
                               kind == LayerKind::attention_context || kind == LayerKind::fused_attention)
        << to_string(kind);
    // Fused attention's backward makes its scores again before its four products.
    EXPECT_EQ(t.backward_flops_ratio, kind == LayerKind::fused_attention ? 2.5 : 2) << to_string(kind);
    EXPECT_EQ(t.saves_logprobs, kind == LayerKind::lm_head || kind == LayerKind::cross_entropy) << to_string(kind);
    EXPECT_EQ(t.recomputes_logprobs, kind == LayerKind::lm_head) << to_string(kind);
    EXPECT_EQ(t.estimates_sensitivity, kind != LayerKind::module) << to_string(kind);
  }
  EXPECT_TRUE(holds_logprobs(LayerKind::cross_entropy, "logprobs"));
  EXPECT_FALSE(holds_logprobs(LayerKind::lm_head, "input"));
}

TEST(LayerKind, FilesWithAnUnknownKindAreRefused) {
  const Profile profile = testing::make_profile(testing::gpt_like(1));
  json doc = profile_to_json(profile);
  doc["layers"][2]["kind"] = "rope";
  EXPECT_EQ(error_of([&] { profile_from_json(doc, "p.json"); }), "p.json: /layers/2/kind: unknown layer kind 'rope'");

  doc = layer_model_to_json(fit_profile(profile, "p.json").model);
  doc["layers"][1]["kind"] = "rope";
  EXPECT_EQ(error_of([&] { layer_model_from_json(doc, "m.json"); }), "m.json: /layers/1/kind: unknown layer kind 'rope'");
}

}  // namespace
}  // namespace papaya::model
