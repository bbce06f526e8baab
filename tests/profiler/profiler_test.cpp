// Profiles of the tiny networks on CPU, checked against what the allocator
// and the clock say of whole steps.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "executor/data.h"
#include "executor/memory.h"
#include "executor/networks/network.h"
#include "executor/networks/source_for.h"
#include "executor/networks/zoo.h"
#include "executor/plan_apply.h"
#include "executor/session.h"
#include "executor/torchscript/imported_network.h"
#include "executor/trainer.h"
#include "model/catalog/network_config.h"
#include "model/catalog/parameter_count.h"
#include "model/catalog/target.h"
#include "model/error.h"
#include "model/fit/fit_profile.h"
#include "model/plan.h"
#include "model/plan_space/predict.h"
#include "model/units.h"
#include "profiler/batch_run.h"
#include "profiler/layer_probe.h"
#include "profiler/profiler.h"
#include "profiler/summary.h"
#include "profiler/wall_clock_timer.h"
#include "tests/executor/torchscript/fixtures.h"
#include "tests/support/input_error.h"
#include "tests/support/test_names.h"

namespace papaya::profiler {
namespace {

constexpr int small = 1, large = 64, probe = 4 * large;

// A zoo network as papaya's modelling commands take it: a mixture routed
// balanced (cli's --moe-imbalance default), so that every expert gets the
// same tokens at every batch on every machine, whatever its router.
model::NetworkConfig modelled_config(const std::string& name) {
  const model::NetworkConfig config = model::load_network_config(name);
  if (!config.mixture()) return config;
  return model::with_expert_routing(config, 1.0 / config.mixture()->experts);
}

// One profile per network and precision, shared by the tests (each takes
// about a second).
// A profile and its progress bar's last count.
struct Profiled {
  model::Profile profile;
  int done = 0, total = 0;
};

const Profiled& tiny_profiled(const std::string& network, const std::string& precision = "fp32") {
  static std::map<std::string, Profiled> cache;
  auto it = cache.find(network + precision);
  if (it == cache.end()) {
    Profiled profiled;
    ProfileOptions options;
    options.network = modelled_config(network);
    options.precision = precision;
    options.batches = {large, small};  // given out of order on purpose
    options.warmup = 2;
    options.steps = 3;
    options.probe_batch = probe;
    options.on_progress = [&](int done, int total, const std::string&) {
      profiled.done = done;
      profiled.total = total;
    };
    profiled.profile = profile_network(options);
    it = cache.emplace(network + precision, std::move(profiled)).first;
  }
  return it->second;
}

const model::Profile& tiny_profile(const std::string& network, const std::string& precision = "fp32") {
  return tiny_profiled(network, precision).profile;
}

double layer_seconds(const model::Profile& p, size_t index) {
  double total = 0;
  for (const auto& l : p.layers) total += l.measured.at(index).forward_s + l.measured.at(index).backward_s;
  return total;
}

class TinyProfile : public ::testing::TestWithParam<std::string> {};

TEST_P(TinyProfile, IsAValidProfileOfEveryLayer) {
  const model::Profile& p = tiny_profile(GetParam());
  EXPECT_EQ(p.batches, (std::vector<int>{small, large}));
  EXPECT_EQ(tiny_profiled(GetParam()).done, tiny_profiled(GetParam()).total);                  // the progress bar ends full
  const model::Profile back = model::profile_from_json(model::profile_to_json(p), "profile");  // schema and consistency
  EXPECT_EQ(back.layers.size(), p.layers.size());
  EXPECT_EQ(p.machine.device, "cpu");
  EXPECT_EQ(p.machine.timing, "wall-clock");
  EXPECT_GT(p.machine.memory_bytes, 0);
  EXPECT_GE(p.machine.threads, 1);
  EXPECT_EQ(p.codecs.size(), 4u);         // 8, 4, 2 bits and 1-bit masks
  EXPECT_EQ(back.inverts.size(), 2u);     // GELU and SiLU, through the JSON
  ASSERT_EQ(back.plan_steps.size(), 2u);  // through the JSON
  for (size_t i = 0; i < back.plan_steps.size(); ++i) {
    EXPECT_EQ(back.plan_steps[i].plan, i == 0 ? "quantize-8" : "recompute-all");
    EXPECT_EQ(back.plan_steps[i].batch, small);
    EXPECT_GT(back.plan_steps[i].iteration_s, 0);
    EXPECT_GT(back.plan_steps[i].keep_iteration_s, 0);  // its paired keep step
  }
  for (const auto& l : p.layers) {
    EXPECT_GE(l.forward_flops_per_sample, 0) << l.path;
    EXPECT_GT(l.forward_bytes_moved_per_sample, 0) << l.path;
    for (const auto& s : l.saved) {
      EXPECT_GT(s.numel_per_sample, 0) << l.path << ":" << s.slot;
      EXPECT_GE(s.storage_bytes_per_sample, s.numel_per_sample * s.element_size) << l.path << ":" << s.slot;
    }
  }
  for (const auto& it : p.iterations) {
    ASSERT_FALSE(it.oom);
    EXPECT_EQ(it.steps, 3);
    EXPECT_GT(it.static_bytes, 0);
    EXPECT_GT(it.forward_end_bytes, it.static_bytes);
    EXPECT_GE(it.peak_bytes, it.forward_end_bytes);
    EXPECT_LE(it.forward_s + it.backward_s + it.optimizer_s, it.iteration_s * 1.0001);
  }
}

// The tensors the layers declare and save (and in bf16 the parameter copies
// their native paths keep) are what the step holds at the end of forward:
// forward_end_bytes - static_bytes. In fp32 every zoo network saves the
// batch's input itself (token ids by the embedding, images and features by
// the first convolution or linear), so it is among the saved storages; in
// bf16 a first layer saves a bf16 copy of images and features while the
// training loop holds the fp32 batch, which counts besides. What is left is
// small and fixed (the targets, batch-norm statistics, causal masks). Under
// autocast the same holds of a first matmul's half-type copy.
TEST_P(TinyProfile, SavedTensorsAddUpToTheActivationsAtTheEndOfForward) {
  for (const std::string precision : {"fp32", "bf16", "amp-bf16"}) {
    const model::Profile& p = tiny_profile(GetParam(), precision);
    int64_t copies = 0;
    for (const auto& l : p.layers) copies += l.parameter_copy_bytes;
    if (precision == "fp32") {
      EXPECT_EQ(copies, 0);
    } else {
      EXPECT_GT(copies, 0);
    }
    for (size_t i = 0; i < p.batches.size(); ++i) {
      const auto& it = p.iterations[i];
      const double measured = static_cast<double>(it.forward_end_bytes - it.static_bytes);
      double saved = saved_bytes(p, it.batch);
      const auto config = model::parse_network_config(p.network_config, p.network);
      const torch::Tensor input = executor::make_synthetic_data(config, torch::kCPU, 0)->next(it.batch).input;
      if (precision != "fp32" && input.is_floating_point()) saved += static_cast<double>(input.nbytes());
      std::cout << GetParam() << " " << precision << " batch " << it.batch << ": saved " << saved << " B, measured " << measured
                << " B (" << 100 * (measured - saved) / measured << "% more)\n";
      EXPECT_NEAR(saved, measured, 0.05 * measured) << precision << " batch " << it.batch;
    }
  }
}

// The layers no backward runs through (a fine-tuned network's frozen front).
std::set<std::string> without_backward(const std::string& name) {
  std::set<std::string> out;
  const auto network = executor::build_network(model::load_network_config(name));
  for (const auto* layer : network->layers()) {
    if (!layer->differentiated()) out.insert(layer->path());
  }
  return out;
}

TEST_P(TinyProfile, TimesArePositiveAndGrowWithTheBatch) {
  const model::Profile& p = tiny_profile(GetParam());
  const std::set<std::string> frozen_front = without_backward(GetParam());
  for (size_t i = 0; i < p.batches.size(); ++i) {
    const auto& it = p.iterations[i];
    EXPECT_GT(it.forward_s, 0);
    EXPECT_GT(it.backward_s, 0);
    EXPECT_GT(it.optimizer_s, 0);
    for (const auto& l : p.layers) {
      EXPECT_GT(l.measured[i].forward_s, 0) << l.path;
      if (frozen_front.count(l.path)) {
        EXPECT_EQ(l.measured[i].backward_s, 0) << l.path;
      } else {
        EXPECT_GT(l.measured[i].backward_s, 0) << l.path;
      }
    }
    for (const auto& s : p.segments) EXPECT_GT(s.recompute_s[i], 0) << s.path;
  }
  // Summed over layers, robust to one layer's noise. Not the whole steps:
  // mlp-tiny's step is mostly its fixed cost (dispatch, the allocator, a
  // sanitizer's checks), so at batch 64 and at 1 the machine's noise decides
  // which is longer (7.7 against 8.1 ms seen under ASan beside another job).
  EXPECT_GT(layer_seconds(p, 1), 1.5 * layer_seconds(p, 0));
}

// Recomputing a segment is its layers' forward again (plus what lies between
// them), without autograd: on CPU 0.7-1.0 times their forward in training.
// Summed over segments, to be robust to one segment's noise.
TEST_P(TinyProfile, RecomputeIsAboutTheSegmentsForward) {
  const model::Profile& p = tiny_profile(GetParam());
  // Recompute over forward at each batch.
  std::vector<double> ratios;
  for (size_t b = 0; b < p.batches.size(); ++b) {
    double recompute = 0, forward = 0;
    for (const auto& s : p.segments) {
      EXPECT_GT(s.recompute_s[b], 0) << s.path;
      recompute += s.recompute_s[b];
    }
    for (const auto& l : p.layers) forward += l.segment.empty() ? 0 : l.measured[b].forward_s;
    ratios.push_back(recompute / forward);
  }
  // Wide bounds: these are microsecond timings on a shared machine, where one
  // step's forward can take several times its due; the batches are measured
  // apart, so one of them within the bounds will do. They still catch a
  // recompute that times nothing, or a whole step.
  EXPECT_TRUE(std::any_of(ratios.begin(), ratios.end(), [](double r) { return r > 0.2 && r < 5.0; }))
      << "recompute / forward: " << ratios.front() << ", " << ratios.back();
}

// Every layer and segment has a probe at the probe batch (4x the largest).
// How long they take against the network's layers is timing, which a loaded
// machine or another thread count moves (1.1x-8x seen): bench/extrapolation.sh.
TEST_P(TinyProfile, ProbesTimeEachLayerAloneAtTheProbeBatch) {
  const model::Profile& p = tiny_profile(GetParam());
  EXPECT_EQ(p.probe_batch, probe);
  double alone = 0;
  const std::set<std::string> frozen_front = without_backward(GetParam());
  for (const auto& l : p.layers) {
    ASSERT_TRUE(l.probe) << l.path;
    EXPECT_GT(l.probe->forward_s, 0) << l.path;
    if (!frozen_front.count(l.path)) {
      EXPECT_GT(l.probe->backward_s, 0) << l.path;
    }
    alone += l.probe->forward_s + l.probe->backward_s;
  }
  for (const auto& s : p.segments) {
    ASSERT_TRUE(s.probe) << s.path;
    EXPECT_GT(s.probe->recompute_s, 0) << s.path;
    EXPECT_EQ(s.between_s.size(), p.batches.size()) << s.path;
  }
  EXPECT_GT(alone, 0);
}

// The step's peak is the larger of the passes' and the optimizer step's,
// which holds the static bytes and AdamW's temporaries; the passes' holds
// every layer's figure.
TEST_P(TinyProfile, TheStepsPeakIsThePassesOrTheOptimizerSteps) {
  const model::Profile& p = tiny_profile(GetParam());
  for (size_t i = 0; i < p.iterations.size(); ++i) {
    const model::IterationMeasurement& it = p.iterations[i];
    EXPECT_EQ(it.peak_bytes, std::max(it.passes_peak_bytes, it.optimizer_peak_bytes)) << it.batch;
    EXPECT_GT(it.optimizer_peak_bytes, it.static_bytes) << it.batch;
    for (const auto& l : p.layers) {
      EXPECT_LE(std::max(l.measured[i].forward_peak_bytes, l.measured[i].backward_peak_bytes), it.passes_peak_bytes) << l.path;
    }
  }
}

// A layer in a block, run within its block alone at the probe batch, takes
// the scratch above each pass's start that it takes in a whole step at that
// batch, byte for byte: the fit extrapolates peaks through the probe's
// (model/fit/fit_profile.cpp), as small batches may use other algorithms.
// So does its run at the rungs below the probe batch: at the profiled
// batches, the step's own there.
TEST_P(TinyProfile, ABlockLayersScratchAtTheProbeBatchIsTheWholeStepsThere) {
  constexpr int at = 8;
  ProfileOptions options;
  options.network = modelled_config(GetParam());
  options.warmup = 1;
  options.steps = 1;
  options.rounds = 1;
  options.batches = {1, 2};
  options.probe_batch = at;
  const model::Profile probed = profile_network(options);
  options.batches = {at};
  options.probe_batch = 0;
  const model::Profile whole = profile_network(options);
  int compared = 0;
  for (size_t i = 0; i < probed.layers.size(); ++i) {
    const model::LayerProfile& l = probed.layers[i];
    if (l.segment.empty()) continue;
    ASSERT_TRUE(l.probe) << l.path;
    const model::LayerMeasurement& m = whole.layers.at(i).measured.at(0);
    EXPECT_EQ(l.probe->forward_headroom_bytes, m.forward_peak_bytes - m.forward_start_bytes) << l.path;
    EXPECT_EQ(l.probe->backward_headroom_bytes, m.backward_peak_bytes - m.backward_start_bytes) << l.path;
    ASSERT_EQ(l.probe->rungs.size(), 3u) << l.path;  // batches 1, 2 and 4, below the probe's 8
    EXPECT_EQ(l.probe->rungs[2].batch, 4);
    for (size_t k : {size_t{0}, size_t{1}}) {
      const model::ProbeRung& rung = l.probe->rungs[k];
      const model::LayerMeasurement& step = l.measured.at(k);
      EXPECT_EQ(rung.batch, probed.batches.at(k));
      EXPECT_EQ(rung.forward_headroom_bytes, step.forward_peak_bytes - step.forward_start_bytes)
          << l.path << " at " << rung.batch;
      EXPECT_EQ(rung.backward_headroom_bytes, step.backward_peak_bytes - step.backward_start_bytes)
          << l.path << " at " << rung.batch;
    }
    for (const model::ProbeRung& rung : l.probe->rungs) EXPECT_TRUE(rung.timed()) << l.path << " at " << rung.batch;
    ++compared;
  }
  if (!probed.segments.empty()) {
    EXPECT_GT(compared, 0);
  }
}

// A network written to a temporary config, profiled at batches 1, 2 and 4
// and fitted, then trained under `plan` at `batch`: the model's peak beside
// the allocator's.
struct PeakUnderPlan {
  model::LayerModel fitted;
  model::Target target;
  model::Estimate predicted;
  int64_t measured = 0;
};

PeakUnderPlan peak_under_plan(const model::NetworkConfig& network, const std::string& plan_name, int batch) {
  ProfileOptions options;
  options.network = network;
  options.batches = {1, 2, 4};
  options.warmup = 1;
  options.steps = 2;
  options.rounds = 1;
  PeakUnderPlan out{model::fit_profile(profile_network(options), "test profile").model, {}, {}, 0};
  out.target = model::profiled_target(out.fitted);
  const model::Plan plan = model::load_plan(plan_name, out.fitted.layout(), out.fitted.network);
  executor::Session session(*executor::source_for(options.network), {});
  executor::apply_plan(*session.network, plan, session.layout);
  executor::TrainOptions train;
  train.steps = 2;
  train.warmup_steps = 1;
  train.batch = batch;
  out.measured = executor::train(*session.network, *session.optimizer, *session.data, session.memory, train).peak_bytes;
  out.predicted = model::predict(out.fitted, out.target, plan, batch);
  return out;
}

PeakUnderPlan peak_under_plan(const nlohmann::json& config, const std::string& plan_name, int batch) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("papaya-test-" + config.at("name").get<std::string>() + ".json")).string();
  std::ofstream(path) << config;
  const model::NetworkConfig network = model::load_network_config(path);
  std::filesystem::remove(path);
  return peak_under_plan(network, plan_name, batch);
}

// The glue between layers holds the step's peak of a small GPT under
// quantize-4: in backward, the split of qkv into heads scatters each head's
// gradient into a zero tensor of the whole qkv output and sums them. The
// profile records it as the gap before the next layer, and the model prices
// it with what the plan holds there: predicted at most one codec scratch
// above the measured peak and not below it by more than 1% (without the
// gaps: 5% below).
TEST(Profiler, PeaksBetweenLayersArePredictedUnderAPlan) {
  const PeakUnderPlan run = peak_under_plan({{"name", "glue-gpt"},
                                             {"family", "gpt"},
                                             {"layers", 1},
                                             {"d_model", 48},
                                             {"heads", 3},
                                             {"mlp_ratio", 2},
                                             {"activation", "silu"},
                                             {"norm", "rmsnorm"},
                                             {"dropout", 0.1},
                                             {"seq_len", 32},
                                             {"vocab", 64}},
                                            "quantize-4", 32);
  const double measured = static_cast<double>(run.measured);
  EXPECT_GE(run.predicted.peak_bytes, 0.99 * measured) << model::peak_location(run.fitted, run.predicted);
  EXPECT_LE(run.predicted.peak_bytes, measured + run.target.codec(4).pack_scratch_max);
}

// A vocabulary of 16,384 makes the LM head the step's peak once the blocks
// are recomputed, and recompute-all makes the head's log-probabilities again
// 256 rows at a time in backward. Keep's backward starts with the loss's
// gradient of all of them (before the head's own window, where the model
// reads it), which the chunks never make; and the chunks sum the trained
// weight's gradient from the first on, which keep makes after its peak:
// frozen (LoRA), no such buffer. Tied or not, trained or frozen, within 1%
// (without the first: 14-29% over; without the second, 5-6% under; with a
// buffer for the frozen weight too, 7% under).
TEST(Profiler, TheLmHeadsChunksArePredictedUnderRecompute) {
  for (bool tied : {true, false}) {
    for (bool lora : {false, true}) {
      nlohmann::json config = {{"name", std::string("big-vocab-") + (tied ? "tied" : "untied") + (lora ? "-lora" : "")},
                               {"family", "gpt"},
                               {"layers", 1},
                               {"d_model", 32},
                               {"heads", 2},
                               {"kv_heads", 1},
                               {"mlp_hidden", 64},
                               {"activation", "swiglu"},
                               {"norm", "rmsnorm"},
                               {"positions", "rotary"},
                               {"qkv_bias", false},
                               {"fused_qkv", false},
                               {"proj_bias", false},
                               {"tied_head", tied},
                               {"seq_len", 32},
                               {"vocab", 16384}};
      if (lora) config["lora"] = {{"rank", 4}, {"alpha", 8}, {"targets", {"q", "v"}}};
      const PeakUnderPlan run = peak_under_plan(config, "recompute-all", 16);
      EXPECT_NEAR(run.predicted.peak_bytes, static_cast<double>(run.measured), 0.01 * static_cast<double>(run.measured))
          << config["name"] << ": " << model::peak_location(run.fitted, run.predicted);
    }
  }
}

// A fine-tuned base stored as bf16, int8 or nf4 keeps its codes in buffers;
// a recomputed block puts back only what its forward moves (a batch norm's
// running statistics), not a copy of every buffer: that copy was the block's
// whole stored base, held through its recomputation (a Llama-2-7B block's
// nf4 weights, 6 % of a QLoRA recompute-all peak; here 2 to 6 % under).
TEST(Profiler, ARecomputedStoredBaseHoldsNoCopyOfItsWeights) {
  for (const std::string format : {"bf16", "int8", "nf4"}) {
    const nlohmann::json config = {{"name", "stored-" + format},
                                   {"family", "gpt"},
                                   {"layers", 2},
                                   {"d_model", 128},
                                   {"heads", 4},
                                   {"kv_heads", 2},
                                   {"mlp_hidden", 352},
                                   {"activation", "swiglu"},
                                   {"norm", "rmsnorm"},
                                   {"positions", "rotary"},
                                   {"qkv_bias", false},
                                   {"fused_qkv", false},
                                   {"proj_bias", false},
                                   {"tied_head", false},
                                   {"seq_len", 32},
                                   {"vocab", 128},
                                   {"lora", {{"rank", 4}, {"targets", {"q", "v"}}, {"base_weights", format}}}};
    const PeakUnderPlan run = peak_under_plan(config, "recompute-all", 8);
    EXPECT_NEAR(run.predicted.peak_bytes, static_cast<double>(run.measured), 0.01 * static_cast<double>(run.measured))
        << format << ": " << model::peak_location(run.fitted, run.predicted);
  }
}

// An LSTM language model imported from TorchScript, its loss cross-entropy
// over every token. Its LSTM is one layer of many ops saving each time
// step's tensors, the gates as four chunks of one tensor; the loss saves
// its log-probabilities after the last layer's forward. Stored, each chunk
// is packed apart (the executor shares a copy between saves of one view
// only), the forward frees each tensor once it is packed and the backward
// restores them an op at a time (measured in the profile's stored step, at
// 2 bits), and the log-probabilities are restored by the loss's backward,
// before the head's: quantize-2 predicted within 1 % of the trained step's
// peak (without those, 2 to 16 % over or under).
TEST(Profiler, AnImportedLstmIsPredictedUnderQuantization) {
  constexpr int64_t vocab = 64, width = 32;
  torch::jit::Module embedding("Embedding");
  embedding.register_parameter("weight", (0.3 * torch::randn({vocab, width})).requires_grad_(), false);
  embedding.define("def forward(self, ids):\n  return torch.embedding(self.weight, ids)\n");
  torch::jit::Module head("Head");
  head.register_parameter("weight", (0.3 * torch::randn({width, vocab})).requires_grad_(), false);
  head.define("def forward(self, x):\n  return x.matmul(self.weight)\n");
  torch::jit::Module top("LstmLm");
  top.register_module("embedding", embedding);
  top.register_module("lstm", executor::torchscript::testing::lstm(width, width));
  top.register_module("head", head);
  top.define("def forward(self, ids):\n  return self.head.forward(self.lstm.forward(self.embedding.forward(ids)))\n");
  const std::string path = executor::torchscript::testing::saved(top, "lstm-lm");
  const model::NetworkConfig network = executor::torchscript::archive_config(path, {"int64[B,24]<64"}, "--input", std::nullopt);
  const PeakUnderPlan narrowest = peak_under_plan(network, "quantize-2", 8), wider = peak_under_plan(network, "quantize-4", 8);
  const double measured = static_cast<double>(narrowest.measured);
  EXPECT_NEAR(narrowest.predicted.peak_bytes, measured, 0.01 * measured)
      << model::peak_location(narrowest.fitted, narrowest.predicted);
  // Measured with 2-bit copies, 4 bits adds its wider copies whole: not
  // below the truth, and above it by at most what they add.
  const double measured_wider = static_cast<double>(wider.measured);
  const double predicted_wider =
      model::predict(narrowest.fitted, narrowest.target,
                     model::load_plan("quantize-4", narrowest.fitted.layout(), narrowest.fitted.network), 8)
          .peak_bytes;
  EXPECT_GE(predicted_wider, 0.99 * measured_wider) << model::peak_location(narrowest.fitted, narrowest.predicted);
  EXPECT_LE(predicted_wider, 1.01 * measured_wider + (predicted_wider - narrowest.predicted.peak_bytes));
  {
    const PeakUnderPlan& run = narrowest;
    // What the profile found: chunks of one storage in views of their own,
    // the loss's slots saved after the head's forward, the stored step.
    std::map<std::string, std::set<std::string>> views_of_storage;
    for (const auto& l : run.fitted.layers) {
      for (const auto& t : l.saved) views_of_storage[t.storage].insert(t.view);
      EXPECT_EQ(std::any_of(l.saved.begin(), l.saved.end(), [](const auto& t) { return t.saved_after_forward; }),
                l.path == "head")
          << l.path;
      EXPECT_FALSE(l.stored_forward_headroom.empty()) << l.path;
    }
    EXPECT_TRUE(
        std::any_of(views_of_storage.begin(), views_of_storage.end(), [](const auto& s) { return s.second.size() >= 4; }));
  }
  std::remove(path.c_str());
}

// A network whose first segment takes the batch's images: the step needs
// no gradient of them, so the segment's recomputation makes none (it had
// asked one, a tensor of the images' size held through the first segment's
// backward, the step's peak here and in MobileNetV3's recompute-all: the
// trained peaks 5 and 12 % above the predictions here). Recomputed: within
// 1 % of the trained step's peak; recomputed from 4-bit copies, within the
// 3 % target (the model's figure for the 4-bit plan rises above the
// recompute plan's by twice what the trained step's does, +2 % here; the
// cause not yet traced).
TEST(Profiler, AFirstSegmentOnTheImagesIsPredictedUnderRecompute) {
  const auto conv = [](int64_t in, int64_t out, int64_t stride) {
    torch::jit::Module m("Conv");
    m.register_parameter("weight", (0.3 * torch::randn({out, in, 3, 3})).requires_grad_(), false);
    m.define("def forward(self, x):\n  return torch.conv2d(x, self.weight, None, [" + std::to_string(stride) + ", " +
             std::to_string(stride) + "], [1, 1])\n");
    return m;
  };
  torch::jit::Module relu("ReLU");
  relu.define("def forward(self, x):\n  return torch.relu(x)\n");
  torch::jit::Module head("Head");
  head.register_parameter("weight", (0.3 * torch::randn({16, 10})).requires_grad_(), false);
  head.define("def forward(self, x):\n  return x.mean([2, 3]).mm(self.weight)\n");
  using executor::torchscript::testing::sequential;
  torch::jit::Module top("Net");
  top.register_module("features", sequential(sequential(conv(8, 16, 1), relu, "conv", "relu"),
                                             sequential(conv(16, 16, 2), relu, "conv", "relu")));
  top.register_module("head", head);
  top.define("def forward(self, x):\n  return self.head.forward(self.features.forward(x))\n");
  const std::string path = executor::torchscript::testing::saved(top, "images-first");
  const model::NetworkConfig network =
      executor::torchscript::archive_config(path, {"float32[B,8,16,16]"}, "--input", std::nullopt);
  for (const auto& [plan, tolerance] :
       std::vector<std::pair<std::string, double>>{{"recompute-all", 0.01}, {"recompute-all+quantize-4", 0.03}}) {
    const PeakUnderPlan run = peak_under_plan(network, plan, 16);
    ASSERT_EQ(run.fitted.segments.size(), 2U);
    const double measured = static_cast<double>(run.measured);
    EXPECT_NEAR(run.predicted.peak_bytes, measured, tolerance * measured)
        << plan << ": " << model::peak_location(run.fitted, run.predicted);
  }
  std::remove(path.c_str());
}

// A residual block ending in a ReLU returns that layer's output; a pre-norm
// transformer block returns a residual sum formed after its last layer.
TEST(Profiler, SegmentsSayWhetherTheyReturnTheirLastLayersOutput) {
  for (const auto& [network, expected] : std::vector<std::pair<std::string, bool>>{{"resnet-tiny", true}, {"gpt-tiny", false}}) {
    const model::Profile& p = tiny_profile(network);
    ASSERT_FALSE(p.segments.empty()) << network;
    for (const auto& s : p.segments) EXPECT_EQ(s.returns_last_layer_output, expected) << s.path;
  }
}

// The wall clock, with a second added to every layer in runs [from, to) of
// the probes: a slow moment of the machine.
class SlowMoment : public LayerTimer {
 public:
  SlowMoment(int layers, int from, int to) : clock_(layers, {}), from_(from), to_(to) {}
  void start_step() override { clock_.start_step(); }
  void begin(int layer, Pass pass) override { clock_.begin(layer, pass); }
  void end(int layer, Pass pass) override { clock_.end(layer, pass); }
  std::vector<PassTimes> finish_step() override {
    std::vector<PassTimes> times = clock_.finish_step();
    if (runs_ >= from_ && runs_ < to_) {
      for (PassTimes& t : times) t = {t.forward_s + 1, t.backward_s + 1};
    }
    ++runs_;
    return times;
  }
  std::string name() const override { return "wall-clock with a slow moment"; }

 private:
  WallClockTimer clock_;
  int from_, to_, runs_ = 0;
};

// A slow moment as long as one pass over the probes (every segment at the
// probe batch and at each profiled batch, every other layer) falls on one
// run of each probe, which the median over the rounds drops; were each
// probe run three times in a row, it would fall on every run of some.
TEST(LayerProbes, ASlowMomentAsLongAsOnePassOverTheProbesMovesNoFigure) {
  const torch::Device cpu(torch::kCPU);
  const model::NetworkConfig config = model::load_network_config("gpt-tiny");
  auto data = executor::make_synthetic_data(config, cpu, 1);
  executor::MemoryTracker memory(cpu);
  auto network = executor::build_network(config);
  ProbeOptions options;
  options.from = 2;
  options.batch = 8;
  options.profiled = {1, 2};
  int pass = 0;
  for (const auto* layer : network->layers()) pass += layer->segment().empty() ? 1 : 0;
  pass += static_cast<int>(network->segments().size() * (1 + options.profiled.size()));
  SlowMoment timer(static_cast<int>(network->layers().size()), pass, 2 * pass);

  const LayerProbes probes = probe_layers(*network, *data, memory, timer, options);
  for (size_t i = 0; i < probes.layers.size(); ++i) {
    ASSERT_TRUE(probes.layers[i]) << network->layers()[i]->path();
    EXPECT_LT(probes.layers[i]->forward_s, 0.5) << network->layers()[i]->path();
    EXPECT_LT(probes.layers[i]->backward_s, 0.5) << network->layers()[i]->path();
  }
  for (size_t s = 0; s < probes.segments.size(); ++s) {
    ASSERT_TRUE(probes.segments[s]);
    EXPECT_LT(std::abs(probes.segments[s]->between_s), 0.5);
    ASSERT_EQ(probes.between_s[s].size(), options.profiled.size());
    for (double between : probes.between_s[s]) EXPECT_LT(std::abs(between), 0.5);
  }
}

// A batch's times are medians over every step of every round, the step's
// and each layer's on its own: one slow step (another process on the
// machine) moves nothing, not even the layer it slowed down in the step that
// is the median as a whole; its bytes are the largest of any round.
TEST(MedianRun, TakesMediansOverEveryStepAndTheLargestBytes) {
  const auto step = [](double iteration_s, double layer_s) {
    StepTimes s;
    s.iteration_s = iteration_s;
    s.optimizer_s = iteration_s / 10;
    s.layers = {{layer_s, 2 * layer_s}};
    return s;
  };
  const auto run = [](std::vector<StepTimes> steps, int64_t peak, double recompute_s) {
    BatchRun r;
    r.iteration.batch = 4;
    r.iteration.steps = static_cast<int>(steps.size());
    r.iteration.peak_bytes = peak;
    r.layers.resize(1);
    r.layers[0].backward_peak_bytes = peak;
    r.recompute_s = {recompute_s};
    r.returns_last_layer_output = {true};
    r.steps = std::move(steps);
    return r;
  };
  // The round and the step that are the median by iteration time (2.0 ms)
  // had its layer slowed down to 90 us; every other step took 10-30 us.
  const BatchRun median = median_run({run({step(3.0e-3, 30e-6), step(3.1e-3, 30e-6), step(2.9e-3, 30e-6)}, 500, 0.1),
                                      run({step(1.0e-3, 10e-6), step(1.1e-3, 10e-6), step(0.9e-3, 10e-6)}, 700, 0.3),
                                      run({step(2.0e-3, 90e-6), step(2.1e-3, 20e-6), step(1.9e-3, 20e-6)}, 600, 0.2)});
  EXPECT_DOUBLE_EQ(median.iteration.iteration_s, 2.0e-3);
  EXPECT_DOUBLE_EQ(median.iteration.optimizer_s, 2.0e-4);
  EXPECT_DOUBLE_EQ(median.layers[0].forward_s, 20e-6);
  EXPECT_DOUBLE_EQ(median.layers[0].backward_s, 40e-6);
  EXPECT_EQ(median.iteration.peak_bytes, 700);
  EXPECT_EQ(median.layers[0].backward_peak_bytes, 700);
  EXPECT_DOUBLE_EQ(median.recompute_s[0], 0.2);
  EXPECT_EQ(median.iteration.steps, 9);
  BatchRun oom;
  oom.iteration.oom = true;
  EXPECT_TRUE(median_run({run({step(1e-3, 10e-6)}, 700, 0.3), oom}).iteration.oom);
}

INSTANTIATE_TEST_SUITE_P(Cpu, TinyProfile,
                         ::testing::Values("gpt-tiny", "llama-tiny", "llama-tiny-lora", "mixtral-tiny", "olmoe-tiny",
                                           "qwen3-tiny", "phi3-tiny", "gemma2-tiny", "gemma3-tiny", "gpt-oss-tiny",
                                           "deepseek-v3-tiny", "deepseek-v3-mtp-tiny", "vit-tiny", "resnet-tiny", "mlp-tiny"),
                         test_support::NetworkParamName());

TEST(Profiler, ABatchOverTheMemoryLimitIsAnOomRowAndTheOthersGoOn) {
  ProfileOptions options;
  options.network = model::load_network_config("mlp-tiny");
  options.batches = {1, 4096};
  options.warmup = 0;
  options.steps = 1;
  options.memory_limit = 4 << 20;  // the weights and batch 1 fit; batch 4096 does not
  const model::Profile p = profile_network(options);
  ASSERT_EQ(p.iterations.size(), 2u);
  EXPECT_FALSE(p.iterations[0].oom);
  EXPECT_TRUE(p.iterations[1].oom);
  EXPECT_EQ(p.layers[0].measured.size(), 2u);
  EXPECT_EQ(p.layers[0].measured[1].forward_s, 0);
  // Probed at 16 x 4096 from batch 1: a layer alone does not fit either.
  EXPECT_EQ(p.probe_batch, 16 * 4096);
  for (const auto& l : p.layers) EXPECT_FALSE(l.probe) << l.path;
  model::profile_from_json(model::profile_to_json(p), "profile");

  options.batches = {4096, 8192};
  try {
    profile_network(options);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("every batch size (4096, 8192) ran out of memory"), std::string::npos) << e.what();
  }
}

// Weights, gradients and AdamW state the device cannot hold: refused before
// building the network (which the system would kill), naming what they take.
TEST(Profiler, AStaticStateOverTheMemoryLimitIsRefused) {
  ProfileOptions options;
  options.network = model::load_network_config("llama-tiny");
  options.batches = {1};
  const double state = model::static_state_bytes(options.network);
  options.memory_limit = static_cast<int64_t>(state) - 1;
  try {
    profile_network(options);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(model::format_bytes(state) + " of weights, gradients and AdamW state alone"),
              std::string::npos)
        << e.what();
  }
}

TEST(Profiler, BadRequestsAreInputErrors) {
  ProfileOptions options;
  options.batches = {2, 2};
  EXPECT_THROW(profile_network(options), InputError);
  options.batches = {2};
  options.network = model::load_network_config("mlp-tiny");
  options.precision = "fp8";
  EXPECT_THROW(profile_network(options), InputError);
  options.precision = "fp32";
  options.steps = 0;
  EXPECT_THROW(profile_network(options), InputError);
  options.steps = 1;
  options.probe_batch = 2;  // not beyond the largest batch
  EXPECT_THROW(profile_network(options), InputError);
  options.probe_batch = 0;
  options.plan_steps = {"quantize-3"};  // a plan, but no calibration plan
  EXPECT_EQ(test_support::input_error_of([&] { profile_network(options); }), "'quantize-3' is not a calibration plan");
}

}  // namespace
}  // namespace papaya::profiler
