// Selective recompute (Korthikanti et al. 2022) on a profiled GPT whose
// attention has dropout: recompute-attention holds, from each core's forward
// to its backward, none of what its softmax, dropout and context save but q,
// k and v, and pays each core's forward again in backward.
#include <gtest/gtest.h>

#include "model/catalog/network_config.h"
#include "model/catalog/target.h"
#include "model/plan.h"
#include "model/plan_space/plan_space.h"
#include "tests/support/quick_fit.h"

namespace papaya::model {
namespace {

TEST(SelectiveRecompute, TheCoresProbabilitiesAreLetGoAndItsForwardPaidAgain) {
  NetworkConfig config = load_network_config("gpt-tiny");
  auto& t = std::get<TransformerConfig>(config.body);
  t.dropout = t.attention_dropout = 0.1;
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

}  // namespace
}  // namespace papaya::model
