#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <numeric>
#include <set>
#include <thread>

#include "executor/data.h"
#include "executor/memory.h"
#include "executor/networks/network.h"
#include "executor/networks/zoo.h"
#include "executor/optimizer.h"
#include "executor/trainer.h"
#include "model/catalog/network_config.h"
#include "model/catalog/parameter_count.h"
#include "model/median.h"

namespace papaya::executor {
namespace {

// Records each layer's output shape and the slots it reported saved.
class Recorder : public LayerObserver {
 public:
  void forward_begin(const Layer&, std::vector<torch::Tensor*>&) override {}
  void saved(const Layer& layer, const Slot& slot, const torch::Tensor&) override { saved_slots[layer.path()].insert(slot.name); }
  void forward_end(const Layer& layer, torch::Tensor& output) override { shapes[layer.path()] = output.sizes().vec(); }
  std::map<std::string, std::vector<int64_t>> shapes;
  std::map<std::string, std::set<std::string>> saved_slots;
};

class TinyNetwork : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    torch::manual_seed(0);
    config = model::load_network_config(GetParam());
    network = build_network(config);
  }
  model::NetworkConfig config;
  std::shared_ptr<Network> network;
};

TEST_P(TinyNetwork, ParameterCountMatchesTheModel) { EXPECT_EQ(network->parameter_count(), model::parameter_count(config)); }

TEST_P(TinyNetwork, LayersHaveUniquePathsAndEverySlotIsReported) {
  std::set<std::string> paths;
  for (const auto* layer : network->layers()) {
    EXPECT_FALSE(layer->path().empty());
    EXPECT_TRUE(paths.insert(layer->path()).second) << "duplicate " << layer->path();
  }
  EXPECT_FALSE(network->segments().empty());
  Recorder recorder;
  {
    ObserverGuard guard(&recorder);
    auto data = make_synthetic_data(config, torch::kCPU, 1);
    network->loss(data->next(4)).backward();
  }
  for (const auto* layer : network->layers()) {
    ASSERT_TRUE(recorder.shapes.count(layer->path())) << layer->path() << " never ran";
    std::set<std::string> declared;
    for (const auto& slot : layer->slots()) declared.insert(slot.name);
    EXPECT_EQ(recorder.saved_slots[layer->path()], declared) << layer->path();
  }
}

TEST_P(TinyNetwork, ForwardAndBackwardGiveFiniteLossAndGradients) {
  auto data = make_synthetic_data(config, torch::kCPU, 1);
  const torch::Tensor loss = network->loss(data->next(4));
  ASSERT_EQ(loss.dim(), 0);
  EXPECT_TRUE(std::isfinite(loss.item<double>()));
  loss.backward();
  for (const auto& p : network->named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_EQ(p.value().grad().sizes(), p.value().sizes()) << p.key();
    EXPECT_TRUE(torch::isfinite(p.value().grad()).all().item<bool>()) << p.key();
  }
}

TEST_P(TinyNetwork, LossFallsOver20Steps) {
  MemoryTracker memory(torch::kCPU);
  auto data = make_synthetic_data(config, torch::kCPU, 2);
  TrainOptions options;
  options.steps = 20;
  options.batch = 8;
  options.lr = 3e-3;
  const TrainReport report = train(*network, *make_optimizer(*network, options.lr, options.weight_decay), *data, memory, options);
  ASSERT_EQ(report.losses.size(), 20u);
  double first = 0, last = 0;
  for (int i = 0; i < 5; ++i) {
    first += report.losses[i];
    last += report.losses[15 + i];
  }
  EXPECT_LT(last, first * 0.95) << "mean of the first 5 losses " << first / 5 << ", of the last 5 " << last / 5;
  EXPECT_GT(report.samples_per_s, 0);
  EXPECT_GT(report.static_bytes, 0);
  EXPECT_GT(report.peak_bytes, report.static_bytes);
}

// The median step is the steady pace: one step slowed down (here by a sleep,
// on a shared machine by another process) moves the mean, not the median.
// Asserted on the measured times themselves, not against a clock.
TEST(Train, MedianStepIsTheMedianOfTheMeasuredSteps) {
  const model::NetworkConfig config = model::load_network_config("mlp-tiny");
  torch::manual_seed(0);
  auto network = build_network(config);
  MemoryTracker memory(torch::kCPU);
  auto data = make_synthetic_data(config, torch::kCPU, 0);
  TrainOptions options;
  options.steps = 7;
  options.batch = 4;
  options.warmup_steps = 2;
  const double pause_s = 0.2;
  options.before_step = [pause_s](int step) {
    if (step == 4) std::this_thread::sleep_for(std::chrono::duration<double>(pause_s));
  };
  const TrainReport report = train(*network, *make_optimizer(*network, options.lr, options.weight_decay), *data, memory, options);
  const std::vector<double>& measured = report.measured_step_seconds;
  ASSERT_EQ(measured.size(), 5u);   // steps 2-6
  EXPECT_GE(measured[2], pause_s);  // step 4 slept
  EXPECT_DOUBLE_EQ(report.median_step_seconds, model::median(measured));
  EXPECT_DOUBLE_EQ(report.step_seconds, std::accumulate(measured.begin(), measured.end(), 0.0) / 5);
  EXPECT_DOUBLE_EQ(report.median_samples_per_s, 4 / report.median_step_seconds);
}

INSTANTIATE_TEST_SUITE_P(Zoo, TinyNetwork,
                         ::testing::Values("gpt-tiny", "llama-tiny", "bert-tiny", "vit-tiny", "resnet-tiny", "mlp-tiny"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(Networks, GptLayoutAndShapes) {
  const auto config = model::load_network_config("gpt-tiny");
  auto network = build_network(config);
  for (const char* path : {"tok_emb", "pos_emb", "blocks.0.ln1", "blocks.0.attn.qkv", "blocks.0.attn.fused", "blocks.0.attn.proj",
                           "blocks.1.mlp.fc1", "blocks.1.mlp.act", "blocks.1.mlp.fc2", "ln_f", "lm_head"}) {
    EXPECT_NE(network->find_layer(path), nullptr) << path;
  }
  EXPECT_NE(network->find_segment("blocks.1"), nullptr);
  Recorder recorder;
  ObserverGuard guard(&recorder);
  network->loss(make_synthetic_data(config, torch::kCPU, 0)->next(3));
  EXPECT_EQ(recorder.shapes["blocks.0.attn.fused"], (std::vector<int64_t>{3, 4, 32, 16}));  // no token-by-token tensor
  EXPECT_EQ(recorder.shapes["blocks.0.mlp.fc1"], (std::vector<int64_t>{3, 32, 256}));
  EXPECT_EQ(recorder.shapes["lm_head"], (std::vector<int64_t>{}));
}

TEST(Networks, ResNetLayoutAndShapes) {
  const auto config = model::load_network_config("resnet-tiny");
  auto network = build_network(config);
  for (const char* path : {"conv1", "bn1", "relu", "maxpool", "layer1.0.conv1", "layer1.0.relu2", "layer2.0.downsample.conv",
                           "avgpool", "fc", "loss"}) {
    EXPECT_NE(network->find_layer(path), nullptr) << path;
  }
  Recorder recorder;
  ObserverGuard guard(&recorder);
  network->loss(make_synthetic_data(config, torch::kCPU, 0)->next(2));
  EXPECT_EQ(recorder.shapes["maxpool"], (std::vector<int64_t>{2, 16, 8, 8}));
  EXPECT_EQ(recorder.shapes["layer2.0.relu2"], (std::vector<int64_t>{2, 32, 4, 4}));
  EXPECT_EQ(recorder.shapes["fc"], (std::vector<int64_t>{2, 10}));
}

TEST(Networks, SwiGluAndRmsNormBuild) {
  const auto config =
      model::parse_network_config(nlohmann::json::parse(R"({"name": "s", "family": "gpt", "layers": 1, "d_model": 32, "heads": 2,
                                "seq_len": 8, "vocab": 20, "activation": "swiglu", "norm": "rmsnorm",
                                "mlp_ratio": 2.5, "dropout": 0.1})"),
                                  "s.json");
  auto network = build_network(config);
  EXPECT_EQ(network->parameter_count(), model::parameter_count(config));
  for (const char* path : {"blocks.0.mlp.up", "blocks.0.mlp.gate", "blocks.0.attn.fused", "emb_drop"}) {
    EXPECT_NE(network->find_layer(path), nullptr) << path;
  }
  // Fused attention drops its weights itself: no dropout layer, no mask.
  EXPECT_EQ(network->find_layer("blocks.0.attn.drop"), nullptr);
  EXPECT_TRUE(network->find_layer("blocks.0.attn.fused")->draws_random());
  const torch::Tensor loss = network->loss(make_synthetic_data(config, torch::kCPU, 0)->next(2));
  loss.backward();
  EXPECT_TRUE(std::isfinite(loss.item<double>()));
}

// Each HuggingFace type papaya imports, at a tiny size: the network built
// has the parameters the model counts (which tests/model/catalog/hf_config_test.cpp
// checks against HuggingFace's), its layers have the shapes the type's
// attention gives, and a step's loss and gradients are finite.
TEST(Networks, ImportedHuggingFaceTypesBuildWhatTheModelCounts) {
  const std::map<std::string, nlohmann::json> docs = {
      {"llama", {{"model_type", "llama"}, {"num_key_value_heads", 2}}},
      // Llama 3.1's rotation: its frequencies scaled.
      {"llama-3.1",
       {{"model_type", "llama"},
        {"num_key_value_heads", 2},
        {"rope_scaling",
         {{"rope_type", "llama3"},
          {"factor", 8.0},
          {"low_freq_factor", 1.0},
          {"high_freq_factor", 4.0},
          {"original_max_position_embeddings", 8}}}}},
      // YaRN's rotation: its frequencies ramped, cos and sin scaled.
      {"llama-yarn",
       {{"model_type", "llama"},
        {"num_key_value_heads", 2},
        {"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 4}}}}},
      // Phi-3's long-context rotation: a factor a pair, the long ones past 8 positions.
      {"llama-longrope",
       {{"model_type", "llama"},
        {"num_key_value_heads", 2},
        {"original_max_position_embeddings", 8},
        {"rope_scaling", {{"type", "longrope"}, {"short_factor", {1.0, 1.0, 1.0, 1.0}}, {"long_factor", {1.0, 2.0, 4.0, 8.0}}}}}},
      {"mistral", {{"model_type", "mistral"}, {"num_key_value_heads", 1}, {"sliding_window", 16}}},
      {"qwen2", {{"model_type", "qwen2"}, {"num_key_value_heads", 2}, {"tie_word_embeddings", true}}},
      {"gpt_neox", {{"model_type", "gpt_neox"}, {"rotary_pct", 0.25}}},
      {"opt", {{"model_type", "opt"}, {"ffn_dim", 64}}},
      // q, k and v one projection, gate and up one.
      {"phi3", {{"model_type", "phi3"}, {"num_key_value_heads", 2}}},
      // Heads of 12 dimensions apart from hidden / heads, q and k normalized per head.
      {"qwen3", {{"model_type", "qwen3"}, {"num_key_value_heads", 2}, {"head_dim", 12}}},
      // Gemma 3: branch norms, GeGLU, scaled embeddings, every second block global.
      {"gemma3_text",
       {{"model_type", "gemma3_text"},
        {"num_key_value_heads", 2},
        {"head_dim", 12},
        {"sliding_window", 8},
        {"sliding_window_pattern", 2}}},
      // Gemma 2: as Gemma 3 without q and k norms, scores and logits soft-capped.
      {"gemma2", {{"model_type", "gemma2"}, {"num_key_value_heads", 2}, {"head_dim", 12}, {"sliding_window", 8}}},
      // GPT-OSS: sinks, biases, a window in block 0, yarn, clamped experts with biases.
      {"gpt_oss",
       {{"model_type", "gpt_oss"},
        {"num_key_value_heads", 2},
        {"head_dim", 12},
        {"sliding_window", 8},
        {"num_local_experts", 4},
        {"num_experts_per_tok", 2},
        {"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 4}}}}},
      {"qwen3_moe",
       {{"model_type", "qwen3_moe"},
        {"num_key_value_heads", 2},
        {"head_dim", 12},
        {"num_experts", 4},
        {"num_experts_per_tok", 2},
        {"moe_intermediate_size", 16}}},
  };
  for (auto [type, doc] : docs) {
    doc.update({{"hidden_size", 32},
                {"num_attention_heads", 4},
                {"num_hidden_layers", 1},
                {"vocab_size", 40},
                {"max_position_embeddings", 16}});
    if (!doc.contains("ffn_dim")) doc["intermediate_size"] = 48;
    const auto config = model::parse_network_config(doc, type + ".json");
    torch::manual_seed(0);
    auto network = build_network(config);
    EXPECT_EQ(network->parameter_count(), model::parameter_count(config)) << type;
    Recorder recorder;
    const ObserverGuard guard(&recorder);
    const torch::Tensor loss = network->loss(make_synthetic_data(config, torch::kCPU, 0)->next(2));
    loss.backward();
    EXPECT_TRUE(std::isfinite(loss.item<double>())) << type;
    const int64_t kv = config.transformer().kv_heads, dim = doc.value("head_dim", 8);
    if (type == "gpt_neox" || type == "phi3") {  // one fused projection, as HuggingFace's query_key_value, qkv_proj
      EXPECT_EQ(recorder.shapes["blocks.0.attn.qkv"], (std::vector<int64_t>{2, 16, (4 + 2 * kv) * dim})) << type;
    } else {
      EXPECT_EQ(recorder.shapes.count("blocks.0.attn.qkv"), 0u) << type;
      EXPECT_EQ(recorder.shapes["blocks.0.attn.q"], (std::vector<int64_t>{2, 16, 4 * dim})) << type;
      EXPECT_EQ(recorder.shapes["blocks.0.attn.k"], (std::vector<int64_t>{2, 16, kv * dim})) << type;
      EXPECT_EQ(recorder.shapes["blocks.0.attn.v"], (std::vector<int64_t>{2, 16, kv * dim})) << type;
    }
    EXPECT_EQ(recorder.shapes["blocks.0.attn.proj"], (std::vector<int64_t>{2, 16, 32})) << type;
    const bool gemma = type.rfind("gemma", 0) == 0;
    EXPECT_EQ(recorder.shapes.count("blocks.0.post_mlp_norm"), gemma ? 1u : 0u) << type;
    if (type == "phi3") {  // gate_up_proj: twice the MLP's width, no up of its own
      EXPECT_EQ(recorder.shapes["blocks.0.mlp.fc1"], (std::vector<int64_t>{2, 16, 2 * 48})) << type;
      EXPECT_EQ(recorder.shapes.count("blocks.0.mlp.up"), 0u) << type;
      EXPECT_EQ(recorder.shapes["blocks.0.mlp.gate"], (std::vector<int64_t>{2, 16, 48})) << type;
    }
    const bool per_head_norm = type.rfind("qwen3", 0) == 0 || type == "gemma3_text";
    EXPECT_EQ(recorder.shapes.count("blocks.0.attn.k_norm"), per_head_norm ? 1u : 0u) << type;
    if (per_head_norm) {
      EXPECT_EQ(recorder.shapes["blocks.0.attn.k_norm"], (std::vector<int64_t>{2, 16, kv, dim})) << type;
    }
    EXPECT_EQ(recorder.shapes["blocks.0.attn.fused"], (std::vector<int64_t>{2, 4, 16, dim}))
        << type;  // fused, as transformers' SDPA
    const bool rotary = type != "opt";
    EXPECT_EQ(recorder.shapes.count("blocks.0.attn.rope_k"), rotary ? 1u : 0u) << type;
    if (rotary) {
      EXPECT_EQ(recorder.shapes["blocks.0.attn.rope_k"], (std::vector<int64_t>{2, kv, 16, dim})) << type;
    }
    EXPECT_EQ(recorder.shapes.count("pos_emb"), rotary ? 0u : 1u) << type;
  }
}

TEST(Networks, Bf16ComputeKeepsFp32Weights) {
  const auto config = model::load_network_config("gpt-tiny");
  auto network = build_network(config);
  network->set_precision({torch::kBFloat16});
  Recorder recorder;
  const torch::Tensor loss = network->loss(make_synthetic_data(config, torch::kCPU, 0)->next(2));
  loss.backward();
  EXPECT_EQ(loss.scalar_type(), torch::kFloat);
  for (const auto& p : network->parameters()) EXPECT_EQ(p.grad().scalar_type(), torch::kFloat);
}

}  // namespace
}  // namespace papaya::executor
