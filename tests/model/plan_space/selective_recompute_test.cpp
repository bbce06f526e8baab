// Selective recompute (Korthikanti et al. 2022) on a profiled GPT whose
// attention has dropout: recompute-attention holds, from each core's forward
// to its backward, none of what its softmax, dropout and context save but q,
// k and v, and pays each core's forward again in backward.
#include <gtest/gtest.h>

#include "model/catalog/network_config.h"
#include "model/catalog/target.h"
#include "model/error.h"
#include "model/plan.h"
#include "model/plan_space/plan_space.h"
#include "model/plan_space/predict.h"
#include "model/strategy_table.h"
#include "tests/support/quick_fit.h"

namespace papaya::model {
namespace {

TEST(SelectiveRecompute, TheCoresProbabilitiesAreLetGoAndItsForwardPaidAgain) {
  NetworkConfig config = load_network_config("gpt-tiny");
  auto& t = std::get<TransformerConfig>(config.body);
  t.dropout = t.attention_dropout = 0.1;
  t.attention = "materialized";
  const LayerModel m = profiler::quick_fit(config);
  const Target target = profiled_target(m);
  const int batch = 4;
  const PlanSpace space(m, target, batch);
  const Plan keep = expand_plan_name("keep", m.layout());
  const Plan selective = expand_plan_name("recompute-attention", m.layout());
  EXPECT_EQ(selective.tensor("blocks.0.attn.softmax", "output").form, Form::recomputed);

  // Where the first block is done and the second not begun, it holds fewer
  // bytes by exactly its core's storages.
  double core_bytes = 0;
  for (const char* key : {"blocks.0.attn.softmax:output", "blocks.0.attn.drop:mask", "blocks.0.attn.context:probs"}) {
    int found = 0;
    for (size_t g = 0; g < space.storages().size(); ++g) {
      if (space.storages()[g].key == key) core_bytes += space.storage_bytes(static_cast<int>(g)), ++found;
    }
    EXPECT_EQ(found, 1) << key;
  }
  int second_block = 0;
  while (m.layers[static_cast<size_t>(second_block)].path != "blocks.1.ln1") ++second_block;
  int point = 0;
  while (space.points()[static_cast<size_t>(point)].layer != second_block ||
         space.points()[static_cast<size_t>(point)].phase != Phase::forward) {
    ++point;
  }
  const auto kept = space.timeline(space.assignment(keep)), recomputed = space.timeline(space.assignment(selective));
  EXPECT_GT(core_bytes, 0);
  EXPECT_DOUBLE_EQ(kept[static_cast<size_t>(point)] - recomputed[static_cast<size_t>(point)], core_bytes);

  // Each block's core runs its forward again.
  double core_forward = 0;
  for (size_t j = 0; j < m.layers.size(); ++j) {
    const LayerKind kind = m.layers[j].kind;
    const bool in_core = kind == LayerKind::attention_scores || kind == LayerKind::softmax ||
                         kind == LayerKind::attention_context || m.layers[j].path.find("attn.drop") != std::string::npos;
    if (in_core) core_forward += target.forward_seconds[j].at(batch);
  }
  EXPECT_NEAR(space.evaluate(space.assignment(selective)).seconds - space.evaluate(space.assignment(keep)).seconds, core_forward,
              1e-9 * core_forward);
  // The decision alone, as a planner adds it up: its changes are its
  // timeline, the dropout's mask and the dropped probabilities with it.
  const std::vector<int> keep_options(space.storages().size(), 0), no_segments(space.segments().size(), -1);
  int probabilities = 0;
  while (space.storages()[static_cast<size_t>(probabilities)].key != "blocks.1.attn.softmax:output") ++probabilities;
  const auto options = space.options(probabilities);
  int recompute_option = -1;
  for (size_t o = 0; o < options.size(); ++o) {
    if (options[o].strategy.form == Form::recomputed) recompute_option = static_cast<int>(o);
  }
  ASSERT_GE(recompute_option, 0);
  EXPECT_EQ(options[static_cast<size_t>(recompute_option)].device_bytes, 0);
  std::vector<int> one = keep_options;
  one[static_cast<size_t>(probabilities)] = recompute_option;
  const auto expected = space.timeline(space.assignment(one, no_segments));
  std::vector<double> got = space.timeline(space.assignment(keep_options, no_segments));
  for (const auto& c : space.changes({{probabilities, recompute_option}})) {
    for (int p = c.from; p <= c.to; ++p) got[static_cast<size_t>(p)] += c.bytes;
  }
  for (size_t p = 0; p < got.size(); ++p) EXPECT_NEAR(got[p], expected[p], 1e-6) << "point " << p;

  // A recomputed block makes its core's storages again itself: the core's
  // decision is moot there.
  const Plan blocks = expand_plan_name("recompute-all", m.layout());
  Plan both = blocks;
  TensorStrategy recompute;
  recompute.form = Form::recomputed;
  both.tensors["blocks.0.attn.softmax:output"] = recompute;
  const Estimate alone = space.evaluate(space.assignment(blocks)), with_core = space.evaluate(space.assignment(both));
  EXPECT_DOUBLE_EQ(with_core.peak_bytes, alone.peak_bytes);
  EXPECT_DOUBLE_EQ(with_core.seconds, alone.seconds);
}

// Fused attention holds no probabilities: recompute-attention would save
// nothing, so the whole-network plans leave it out and asked for by name it
// is refused, saying why.
TEST(SelectiveRecompute, HasNothingToDropUnderFusedAttention) {
  const LayerModel m = profiler::quick_fit(load_network_config("gpt-tiny"));
  const Target target = profiled_target(m);
  const std::vector<std::string> names = plan_names(m, target);
  for (const std::string& name : names) EXPECT_EQ(name.find(recompute_attention_term), std::string::npos) << name;
  EXPECT_NE(std::find(names.begin(), names.end(), "recompute-all"), names.end());
  try {
    expand_plan_name("recompute-attention+quantize-4", m.layout());
    ADD_FAILURE() << "recompute-attention accepted under fused attention";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "plan 'recompute-attention+quantize-4': recompute-attention has nothing to drop: the network's attention is "
              "fused (blocks.0.attn.fused keeps no probabilities); recompute-all recomputes whole blocks");
  }
}

}  // namespace
}  // namespace papaya::model
