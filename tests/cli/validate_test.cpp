// End-to-end runs of papaya validate on gpt-tiny on the CPU: profile, fit,
// predict, train each (plan, batch) and compare.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/cli/run_papaya.h"

namespace papaya::testing {
namespace {

using nlohmann::json;

class Validate : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return dir_.path(name); }
  TempDir dir_{"papaya-validate-cli"};
};

TEST_F(Validate, ComparesPredictionsWithTrainingAndPlotsThem) {
  const std::string svg = path("validate.svg");
  const Outcome run = run_papaya(
      "validate --network gpt-tiny --profile-batches 1,2,4 --batches 4,8 --plans keep,quantize-4 "
      "--steps 4 --device cpu --json --plot " +
      svg);
  ASSERT_EQ(run.code, 0) << run.err;
  const json doc = json::parse(run.out);
  EXPECT_EQ(doc["network"], "gpt-tiny");
  EXPECT_EQ(doc["device"], "cpu");
  EXPECT_EQ(doc["profile_batches"], json::array({1, 2, 4}));
  ASSERT_EQ(doc["rows"].size(), 4u);
  for (const auto& row : doc["rows"]) {
    for (const char* key : {"plan", "batch", "predicted_peak_bytes", "measured_peak_bytes", "peak_error_pct",
                            "predicted_samples_per_s", "measured_samples_per_s", "samples_per_s_error_pct"}) {
      ASSERT_TRUE(row.contains(key)) << key;
    }
    EXPECT_FALSE(row["out_of_memory"].get<bool>());
    EXPECT_GT(row["measured_peak_bytes"].get<double>(), 0);
    EXPECT_GT(row["measured_samples_per_s"].get<double>(), 0);
    const double error = 100 * (row["predicted_peak_bytes"].get<double>() - row["measured_peak_bytes"].get<double>()) /
                         row["measured_peak_bytes"].get<double>();
    EXPECT_NEAR(row["peak_error_pct"].get<double>(), error, 1e-9);
    // The layer model prices keep exactly from the profile; quantize-4 from packed sizes.
    EXPECT_LT(std::abs(error), row["plan"] == "keep" ? 5 : 10) << row.dump();
  }
  for (const char* measure : {"memory", "throughput"}) {
    for (const char* key : {"r2", "median_abs_err_pct", "max_abs_err_pct"})
      ASSERT_TRUE(doc[measure].contains(key)) << measure << key;
    EXPECT_LE(doc[measure]["median_abs_err_pct"].get<double>(), doc[measure]["max_abs_err_pct"].get<double>());
  }
  // Four distinct peaks, predicted within a few percent: R² near 1.
  EXPECT_GT(doc["memory"]["r2"].get<double>(), 0.95);
  std::stringstream figure;
  figure << std::ifstream(svg).rdbuf();
  EXPECT_NE(figure.str().find("<svg"), std::string::npos);
  for (const char* text : {"keep", "quantize-4", "peak memory", "throughput"}) {
    EXPECT_NE(figure.str().find(text), std::string::npos) << text;
  }
}

TEST_F(Validate, PrintsATableAndTheTargets) {
  const Outcome run = run_papaya("validate --profile-batches 1,2 --batches 2 --plans recompute-all --steps 3");
  ASSERT_EQ(run.code, 0) << run.err;
  for (const char* text : {"papaya validate: gpt-tiny", "recompute-all", "peak predicted", "samples/s measured",
                           "peak memory: R²", "within the CPU target of 3%", "within the CPU target of 15%"}) {
    EXPECT_NE(run.out.find(text), std::string::npos) << text << "\n" << run.out;
  }
}

// Under torch.autocast's policy the profile records each saved tensor in
// the type it is saved in (half-type copies, fp32 norms and softmax), so the
// model prices autocast as it prices any precision: peaks within the CPU
// target, with plans that recompute (blocks, attention cores) and quantize.
TEST_F(Validate, AutocastPeaksArePredictedFromItsProfile) {
  // Fused attention (the default), and materialized with its probabilities recomputed.
  for (const std::string attention : {"fused --plans keep,recompute-all,quantize-4",
                                      "materialized --plans keep,recompute-all,recompute-attention,quantize-4"}) {
    const Outcome run = run_papaya(
        "validate --network gpt-tiny --precision amp-bf16 --profile-batches 1,2,4 --batches 8 "
        "--steps 3 --json --attention " +
        attention);
    ASSERT_EQ(run.code, 0) << run.err;
    const json doc = json::parse(run.out);
    EXPECT_EQ(doc["precision"], "amp-bf16");
    ASSERT_GE(doc["rows"].size(), 3u);
    for (const auto& row : doc["rows"]) EXPECT_LT(std::abs(row["peak_error_pct"].get<double>()), 3) << attention << row.dump();
  }
}

// A fine-tuned network whose tied embedding (and so its LM head's weight)
// is frozen, Qwen2-shaped: its first RMSNorm's input needs no gradient and
// its head's log-probabilities are recomputed in two chunks (a vocabulary of
// 8,192: 256 rows, 8 samples a chunk). Each peak is predicted to less than
// half of one hidden-sized tensor (b x s x h floats); the model missed three
// such tensors before: the chunked head's input gradient, the head's input
// and the first norm's input, held or not as the paths hold them.
TEST_F(Validate, AFrozenTiedHeadAndAFrozenFrontArePredictedToTheTensor) {
  nlohmann::json config = json::parse(R"({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
      "hidden_size": 64, "intermediate_size": 176, "num_attention_heads": 4, "num_key_value_heads": 2,
      "num_hidden_layers": 2, "vocab_size": 8192, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
      "max_position_embeddings": 4096, "tie_word_embeddings": true, "attention_dropout": 0.0})");
  const std::string file = path("qwen2-shaped.json");
  std::ofstream(file) << config.dump();
  const int batch = 16, tokens = 32, hidden = 64;
  const Outcome run = run_papaya("validate --network " + file + " --seq-len " + std::to_string(tokens) +
                                 " --freeze tok_emb --profile-batches 1,2,4 --batches " + std::to_string(batch) +
                                 " --plans keep,recompute-all,quantize-4 --steps 3 --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json doc = json::parse(run.out);
  ASSERT_EQ(doc["rows"].size(), 3u);
  const double tensor = 4.0 * batch * tokens * hidden;
  for (const auto& row : doc["rows"]) {
    EXPECT_LT(std::abs(row["predicted_peak_bytes"].get<double>() - row["measured_peak_bytes"].get<double>()), tensor / 2)
        << row.dump();
  }
}

TEST_F(Validate, BadInputExitsTwoBeforeProfiling) {
  const std::string svg = path("never.svg");
  expect_input_error("validate --network no-such-net", "no-such-net");
  expect_input_error("validate --batches 8,x", "--batches");
  expect_input_error("validate --batches 0", "--batches");
  expect_input_error("validate --profile-batches 1,-2", "--profile-batches");
  expect_input_error("validate --plans keep,recompute --plot " + svg, "plan 'recompute'");
  expect_input_error("validate --plans keep,swap", "needs a CUDA device");
  expect_input_error("validate --steps 2", "--steps 2");
  expect_input_error("validate --device tpu", "device tpu: ");
  expect_input_error("validate --precision amp-fp8", "precision amp-fp8: ");
  expect_input_error("validate --plot " + path("figure.gif"), ".svg or .png");
  expect_input_error("validate --plot " + path("absent/figure.svg"), "cannot write");
  EXPECT_FALSE(std::filesystem::exists(svg));
}

// Two LM heads (DeepSeek-V3-tiny's and its multi-token prediction
// module's): under quantize-4 each recomputes its log-probabilities chunk by
// chunk, priced at its own head, and every peak is the CPU target's 3 % from
// the run's.
TEST_F(Validate, EachLmHeadOfAMultiTokenPredictionNetworkIsPricedAtItself) {
  const Outcome run = run_papaya(
      "validate --network deepseek-v3-mtp-tiny --profile-batches 1,2,4 --batches 8,16 --plans keep,quantize-4 --steps 3 "
      "--json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json doc = json::parse(run.out);
  ASSERT_EQ(doc["rows"].size(), 4u);
  for (const auto& row : doc["rows"]) EXPECT_LT(std::abs(row["peak_error_pct"].get<double>()), 3) << row.dump();
}

}  // namespace
}  // namespace papaya::testing
