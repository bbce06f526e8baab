// One rank of a tensor-, sequence- and context-parallel group, as the model
// of one process: Megatron's GPT block holds Korthikanti et al.'s bytes
// (2022, "Reducing Activation Recomputation in Large Transformer Models",
// section 4), and every degree 1 is the network trained alone.
#include "model/parallel/tensor_split.h"

#include <gtest/gtest.h>

#include <set>

#include "model/catalog/network_config.h"
#include "model/error.h"
#include "tests/support/quick_fit.h"

namespace papaya::model {
namespace {

// GPT with dropout, every activation in bf16, its attention `attention`
// (materialized: the block the paper counts).
LayerModel gpt_with_dropout(const std::string& attention = "materialized") {
  NetworkConfig config = load_network_config("gpt-tiny");
  auto& t = std::get<TransformerConfig>(config.body);
  t.dropout = t.attention_dropout = 0.1;
  t.attention = attention;
  return profiler::quick_fit(config, 0, "bf16");
}

// Bytes per sample of the storages block 0 saves, each counted once.
double block_bytes(const LayerModel& m) {
  double bytes = 0;
  for (const LayerFit& l : m.layers) {
    if (block_of_path(l.path) != 0) continue;
    for (const auto& t : l.saved) {
      if (t.per_sample && t.storage == tensor_key(l.path, t.slot)) bytes += t.storage_bytes_per_sample;
    }
  }
  return bytes;
}

class TensorSplit : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { whole_ = new LayerModel(gpt_with_dropout()); }
  static void TearDownTestSuite() { delete whole_; }
  static LayerModel split(int t, bool sequence, int c = 1) {
    ParallelLayout layout;
    layout.tensor = t, layout.sequence = sequence, layout.context = c;
    return split_across_ranks(*whole_, transformer_shape(*whole_, "gpt"), layout);
  }
  // s, b (one sample), h, a of the paper; bf16 (2 bytes).
  static constexpr double s = 32, h = 64, a = 4;
  // The layer norms' mean and rstd the paper does not count: 2 a norm, 2 bytes a token each.
  static constexpr double norm_statistics = 2 * 2 * 2 * s;
  static LayerModel* whole_;
};
LayerModel* TensorSplit::whole_ = nullptr;

TEST_F(TensorSplit, TheShapeIsReadOffTheLayers) {
  const TransformerShape shape = transformer_shape(*whole_, "gpt");
  EXPECT_EQ(shape.blocks, 2);
  EXPECT_EQ(shape.heads, 4);
  EXPECT_EQ(shape.kv_heads, 4);
  EXPECT_EQ(shape.tokens, 32);
  EXPECT_EQ(shape.experts, 0);
}

TEST_F(TensorSplit, ABlockHoldsThePapersBytesUnderEachSplit) {
  // Without parallelism: sbh(34 + 5as/h).
  EXPECT_DOUBLE_EQ(block_bytes(*whole_), s * h * (34 + 5 * a * s / h) + norm_statistics);
  for (int t : {2, 4}) {
    SCOPED_TRACE("t = " + std::to_string(t));
    // Tensor parallelism: sbh(10 + 24/t + 5as/(ht)); the norms are copied on every rank.
    EXPECT_DOUBLE_EQ(block_bytes(split(t, false)), s * h * (10 + 24.0 / t + 5 * a * s / (h * t)) + norm_statistics);
    // Sequence parallelism as well: sbh(34/t + 5as/(ht)).
    EXPECT_DOUBLE_EQ(block_bytes(split(t, true)), s * h * (34.0 / t + 5 * a * s / (h * t)) + norm_statistics / t);
  }
  // Context parallelism splits every token's tensors, and attention's rows.
  EXPECT_DOUBLE_EQ(block_bytes(split(1, false, 2)), block_bytes(*whole_) / 2);
}

// Fused attention (docs/memory-model.md, "Fused attention"): no
// token-by-token term; q, k and v as before, the output shared with the
// output projection's input, one fp32 log-sum-exp a query row and head (4a
// bytes a token), no dropout mask. A GPT block: sbh(34 + 4a/h).
TEST(FusedTensorSplit, AGptBlockHoldsItsClosedFormUnderEachSplit) {
  const LayerModel whole = gpt_with_dropout("fused");
  const TransformerShape shape = transformer_shape(whole, "gpt");
  const auto split = [&](int t, bool sequence) {
    ParallelLayout layout;
    layout.tensor = t, layout.sequence = sequence;
    return split_across_ranks(whole, shape, layout);
  };
  constexpr double s = 32, h = 64, a = 4, norm_statistics = 2 * 2 * 2 * s;
  EXPECT_DOUBLE_EQ(block_bytes(whole), s * h * (34 + 4 * a / h) + norm_statistics);
  for (int t : {2, 4}) {
    SCOPED_TRACE("t = " + std::to_string(t));
    EXPECT_DOUBLE_EQ(block_bytes(split(t, false)), s * h * (10 + 24.0 / t + 4 * a / (h * t)) + norm_statistics);
    EXPECT_DOUBLE_EQ(block_bytes(split(t, true)), s * h * (34.0 / t + 4 * a / (h * t)) + norm_statistics / t);
  }
}

// A Llama block (RMSNorm keeping its input, its 1/rms and its normalized
// input; rotary q and k; k and v at kv heads; SwiGLU of width f; no
// dropout), all bf16: sbh(16 + 4·kv/a + 8f/h) + sb(4a + 4). Under tensor parallelism the norms, their outputs (the
// projections' inputs) stay whole: sbh(12) + (sbh(4 + 8f/h) + k and v's
// share + 4asb)/t.
TEST(FusedTensorSplit, ALlamaBlockHoldsItsClosedFormUnderEachSplit) {
  NetworkConfig config = load_network_config("llama-tiny");
  std::get<TransformerConfig>(config.body).attention = "fused";
  const LayerModel whole = profiler::quick_fit(config, 0, "bf16");
  const TransformerShape shape = transformer_shape(whole, "llama");
  constexpr double s = 32, h = 64, a = 4, kv = 2, f = 176, rstd = 2 * 2 * s;
  EXPECT_DOUBLE_EQ(block_bytes(whole), s * h * (16 + 4 * kv / a + 8 * f / h) + s * 4 * a + rstd);
  for (int t : {2, 4}) {
    SCOPED_TRACE("t = " + std::to_string(t));
    ParallelLayout layout;
    layout.tensor = t;
    // k and v: a rank holds kv/t of their heads, or one where t passes kv.
    const double kv_share = std::max(1.0 / t, 1 / kv);
    EXPECT_DOUBLE_EQ(block_bytes(split_across_ranks(whole, shape, layout)),
                     s * h * (12 + (4 + 8 * f / h) / t + 4 * kv / a * kv_share) + s * 4 * a / t + rstd);
    layout.sequence = true;
    EXPECT_DOUBLE_EQ(block_bytes(split_across_ranks(whole, shape, layout)),
                     s * h * ((16 + 8 * f / h) / t + 4 * kv / a * kv_share) + s * 4 * a / t + rstd / t);
  }
}

TEST_F(TensorSplit, TheKeepStepHoldsWhatTheSplitTensorsHold) {
  // What one more block holds in the fitted keep step, against the paper's bytes a block.
  const auto one_block = [](const LayerModel& m) {
    double first = 0, second = 0;
    for (const LayerFit& l : m.layers) {
      if (l.path == "blocks.0.ln1") first = l.forward_start.per_sample;
      if (l.path == "blocks.1.ln1") second = l.forward_start.per_sample;
    }
    return second - first;
  };
  const double measured = one_block(*whole_);
  ASSERT_NEAR(measured, block_bytes(*whole_), 0.01 * block_bytes(*whole_));
  for (int t : {2, 4}) {
    for (bool sequence : {false, true}) {
      const LayerModel rank = split(t, sequence);
      EXPECT_NEAR(one_block(rank), block_bytes(rank), 0.01 * block_bytes(rank)) << "t = " << t << ", sp " << sequence;
    }
  }
}

TEST_F(TensorSplit, WeightsAndFlopsSplitAsMegatronSplitsThem) {
  const LayerModel rank = split(4, true);
  double weights = 0, norms = 0, flops = 0, flops_rank = 0;
  for (size_t j = 0; j < whole_->layers.size(); ++j) {
    const LayerFit& w = whole_->layers[j];
    const LayerFit& r = rank.layers[j];
    flops += w.forward_flops_per_sample, flops_rank += r.forward_flops_per_sample;
    if (w.kind == LayerKind::layernorm || w.kind == LayerKind::position) {
      EXPECT_EQ(r.parameter_bytes, w.parameter_bytes) << w.path;  // copied on every rank
      norms += static_cast<double>(w.parameter_bytes);
    } else {
      EXPECT_NEAR(static_cast<double>(r.parameter_bytes), static_cast<double>(w.parameter_bytes) / 4, 1) << w.path;
      weights += static_cast<double>(w.parameter_bytes);
    }
  }
  // Static state: each weight's share of the whole's bytes a weight.
  EXPECT_NEAR(rank.static_bytes / whole_->static_bytes, (weights / 4 + norms) / (weights + norms), 1e-9);
  EXPECT_NEAR(flops_rank, flops / 4, 1e-6 * flops);  // every FLOP a quarter (norms too, on a quarter of the tokens)
}

// Under sequence parallelism a column-parallel projection gathers the
// tokens of its input: beyond what it starts from, its forward holds them
// whole besides its share of the output (as tensor parallelism alone holds
// it), and its backward them and its input's gradient over every token
// besides its share of what one process's backward makes.
TEST_F(TensorSplit, AProjectionGathersTheTokensUnderSequenceParallelism) {
  const int t = 2;
  const LayerModel gathering = split(t, true), alone = split(t, false);
  int checked = 0;
  for (size_t j = 0; j < whole_->layers.size(); ++j) {
    const LayerFit& w = whole_->layers[j];
    const bool column = w.kind == LayerKind::lm_head || layer_role(w.path) == "qkv" || layer_role(w.path) == "fc1";
    if (!column) continue;
    const double input = w.saved.front().storage_bytes_per_sample;  // every token's, in one process
    const auto beyond_start = [&](const LayerModel& m) {
      const LayerFit& l = m.layers[j];
      return std::pair{l.forward_peak.per_sample - l.forward_start.per_sample,
                       l.backward_peak.per_sample - l.backward_start.per_sample};
    };
    const auto [forward, backward] = beyond_start(gathering);
    const double forward_alone = beyond_start(alone).first;
    EXPECT_NEAR(forward, forward_alone + input, 1e-6 * input) << w.path;
    const double made = w.backward_peak.per_sample - w.backward_start.per_sample;
    EXPECT_NEAR(backward, made / t + input * (2 - 1.0 / t), 1e-6 * input) << w.path;
    ++checked;
  }
  EXPECT_EQ(checked, 5);  // two blocks' qkv and fc1, the LM head
}

// A LoRA base's projections are frozen: they save no input, yet under
// sequence parallelism each gathers it over every token all the same (the
// normed stream before it), as a trained projection does its saved input.
TEST(FrozenTensorSplit, AFrozenProjectionGathersTheStreamItDoesNotSave) {
  LoraConfig lora;
  lora.rank = 4;
  lora.targets = {"qkv"};
  const LayerModel whole = profiler::quick_fit(with_lora(load_network_config("llama-tiny"), lora));
  const TransformerShape shape = transformer_shape(whole, "llama");
  const auto split = [&](bool sequence) {
    ParallelLayout layout;
    layout.tensor = 2, layout.sequence = sequence;
    return split_across_ranks(whole, shape, layout);
  };
  const LayerModel gathering = split(true), alone = split(false);
  double stream = 0;  // the last norm's output a sample
  int checked = 0;
  for (size_t j = 0; j < whole.layers.size(); ++j) {
    const LayerFit& w = whole.layers[j];
    if (w.kind == LayerKind::rmsnorm) stream = w.output_bytes_per_sample;
    const std::string role = layer_role(w.path);
    if (w.kind != LayerKind::linear || (role != "qkv" && role != "fc1" && role != "up")) continue;
    ASSERT_TRUE(w.saved.empty()) << w.path << ": a frozen projection saves nothing";
    const double forward = gathering.layers[j].forward_peak.per_sample - gathering.layers[j].forward_start.per_sample;
    const double forward_alone = alone.layers[j].forward_peak.per_sample - alone.layers[j].forward_start.per_sample;
    ASSERT_GT(stream, 0);
    EXPECT_NEAR(forward, forward_alone + stream, 1e-6 * stream) << w.path;
    ++checked;
  }
  EXPECT_EQ(checked, 2 * 3);  // two blocks' qkv, fc1 (the gate) and up
}

// Under sequence parallelism a row-parallel projection makes its output over
// every token before the reduce-scatter after it, and its backward starts
// from its output's gradient gathered over every token, beside its share.
// Without it, the vocabulary-parallel LM head's backward makes its input's
// gradient over every token (each rank's part of the group's sum), where
// its logits' figures are this rank's share.
TEST_F(TensorSplit, ARowProjectionSumsEveryTokenAndTheHeadMakesItsInputsGradientWhole) {
  const int t = 2;
  const LayerModel gathering = split(t, true), alone = split(t, false);
  const auto beyond_start = [](const LayerFit& l) {
    return std::pair{l.forward_peak.per_sample - l.forward_start.per_sample,
                     l.backward_peak.per_sample - l.backward_start.per_sample};
  };
  int rows = 0, heads = 0;
  for (size_t j = 0; j < whole_->layers.size(); ++j) {
    const LayerFit& w = whole_->layers[j];
    const auto [forward_made, backward_made] = beyond_start(w);
    if (row_parallel(w.path)) {
      const double output = w.output_bytes_per_sample;  // every token's, in one process
      const auto [forward, backward] = beyond_start(gathering.layers[j]);
      EXPECT_NEAR(forward, forward_made / t + output * (1 - 1.0 / t), 1e-6 * output) << w.path;
      EXPECT_NEAR(backward, backward_made / t + output, 1e-6 * output) << w.path;
      ++rows;
    } else if (w.kind == LayerKind::lm_head) {
      const double input = w.saved.front().storage_bytes_per_sample;
      EXPECT_NEAR(beyond_start(alone.layers[j]).second, backward_made / t + input * (1 - 1.0 / t), 1e-6 * input);
      ++heads;
    }
  }
  EXPECT_EQ(rows, 4);  // two blocks' proj and fc2
  EXPECT_EQ(heads, 1);
}

// In backward a layer within a block's width holds, beyond the saved
// tensors, its output's gradient at its share and the residual stream's
// gradient waiting for the block's input: whole on every rank without
// sequence parallelism, split t ways with it.
TEST_F(TensorSplit, TheResidualStreamsGradientIsWholeWithoutSequenceParallelism) {
  const int t = 2;
  // Bytes a sample of the storages saved first by layers 0..j.
  const auto saved_through = [](const LayerModel& m, size_t j) {
    double bytes = 0;
    for (size_t k = 0; k <= j; ++k) {
      for (const auto& saved : m.layers[k].saved) {
        if (saved.per_sample && saved.storage == tensor_key(m.layers[k].path, saved.slot))
          bytes += saved.storage_bytes_per_sample;
      }
    }
    return bytes;
  };
  int checked = 0;
  for (size_t j = 0; j < whole_->layers.size(); ++j) {
    const LayerFit& w = whole_->layers[j];
    if (layer_role(w.path) != "act") continue;  // the MLP's activation: between fc1 and fc2
    const double live = w.backward_start.per_sample - saved_through(*whole_, j), output = w.output_bytes_per_sample;
    ASSERT_GT(live - output, 0) << w.path << ": nothing beyond the output's gradient";
    for (const bool sequence : {false, true}) {
      const LayerModel rank = split(t, sequence);
      const double rank_live = rank.layers[j].backward_start.per_sample - saved_through(rank, j);
      EXPECT_NEAR(rank_live, output / t + (live - output) / (sequence ? t : 1), 1e-6 * live) << w.path << ", sp " << sequence;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

TEST_F(TensorSplit, EveryDegreeOneIsTheNetworkAlone) {
  const LayerModel rank = split(1, false);
  EXPECT_EQ(layer_model_to_json(rank), layer_model_to_json(*whole_));
}

}  // namespace
}  // namespace papaya::model
