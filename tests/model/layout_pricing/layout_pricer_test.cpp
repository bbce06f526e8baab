// Many GPUs priced from the model of one process: a layout of one GPU is
// the network trained alone, data parallelism alone is the data-parallel
// model, pipeline stages hold their blocks, and the search keeps to memory
// and to what an engine can run (tests/cli/engine_arguments_test.cpp: their names).
#include "model/layout_pricing/layout_pricer.h"

#include <gtest/gtest.h>

#include "model/catalog/network_config.h"
#include "model/catalog/target.h"
#include "model/error.h"
#include "model/layout_pricing/layout_search.h"
#include "model/parallel/data_parallel.h"
#include "model/parallel/pipeline_stages.h"
#include "model/parallel/sharding.h"
#include "model/parallel/tensor_split.h"
#include "model/plan.h"
#include "model/plan_space/predict.h"
#include "tests/support/quick_fit.h"

namespace papaya::model {
namespace {

// A 4-block Llama-style network: stages of whole blocks, k/v heads fewer than the heads.
LayerModel llama_four_blocks() {
  NetworkConfig config = load_network_config("llama-tiny");
  std::get<TransformerConfig>(config.body).layers = 4;
  return profiler::quick_fit(config);
}

ClusterLinks links() {
  return {8, "NVLink-4", "InfiniBand-NDR", LinkFit{10e-6, 300e9, std::nullopt}, LinkFit{30e-6, 50e9, std::nullopt}};
}

class LayoutPricing : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = new LayerModel(llama_four_blocks()); }
  static void TearDownTestSuite() { delete model_; }
  static LayerModel* model_;
};
LayerModel* LayoutPricing::model_ = nullptr;

TEST_F(LayoutPricing, OneGpuIsTheNetworkTrainedAlone) {
  for (const std::string plan : {"keep", "recompute-all", "quantize-4"}) {
    ParallelLayout one;
    one.micro_batch = 4;
    const LayoutEstimate e = estimate_layout(*model_, one, {"", links()}, plan);
    const Estimate alone = predict(*model_, profiled_target(*model_), expand_plan_name(plan, model_->layout()), 4);
    EXPECT_DOUBLE_EQ(e.peak_bytes, alone.peak_bytes) << plan;
    EXPECT_NEAR(e.iteration_seconds, alone.seconds, 1e-12 * alone.seconds) << plan;
    EXPECT_EQ(e.bubble_seconds, 0);
    EXPECT_EQ(e.exposed_comm_seconds, 0);
    EXPECT_NEAR(e.tokens_per_s, 4 * 32 / alone.seconds, 1e-9 * e.tokens_per_s);
  }
}

TEST_F(LayoutPricing, DataParallelismAloneIsTheDataParallelModel) {
  for (int zero : {0, 1, 2, 3}) {
    ParallelLayout l;
    l.data = 4, l.zero_stage = zero, l.micro_batch = 2;
    const LayoutEstimate e = estimate_layout(*model_, l, {"", links()}, "keep");
    Target target = profiled_target(*model_);
    set_data_parallel(target, {4, zero, "InfiniBand-NDR", links().intra});  // 4 GPUs: within a node
    const Estimate ranks = predict(*model_, target, expand_plan_name("keep", model_->layout()), 2);
    EXPECT_DOUBLE_EQ(e.peak_bytes, ranks.peak_bytes) << "ZeRO-" << zero;
    EXPECT_NEAR(e.iteration_seconds, ranks.seconds, 1e-9 * ranks.seconds) << "ZeRO-" << zero;
    EXPECT_NEAR(e.stages[0].static_bytes, static_bytes_per_rank(*model_, {4, zero, "", links().intra}), 1);
  }
}

// A rank that splits nothing runs the whole network: the figures measured
// of each layer (its times where it was timed, its scratch) price its
// layout as they price the network alone, here on a model whose layers were
// timed well off their curves.
TEST_F(LayoutPricing, RanksThatSplitNothingKeepEachLayersMeasuredFigures) {
  LayerModel timed = *model_;
  for (LayerFit& l : timed.layers) {
    for (const double batch : {1.0, 2.0, 4.0}) {
      l.forward_timed.push_back({batch, 1.5 * l.forward_seconds.at(batch)});
      l.backward_timed.push_back({batch, 0.5 * l.backward_seconds.at(batch)});
    }
  }
  for (const std::string hardware : {"", "A100-80GB"}) {  // the profiled machine, and a GPU its layers are carried to
    for (const std::string plan : {"keep", "recompute-all"}) {
      ParallelLayout l;
      l.data = 4, l.zero_stage = 1, l.micro_batch = 4;
      const LayoutEstimate e = estimate_layout(timed, l, {hardware, links()}, plan);
      const auto ranks_of = [&](const LayerModel& m) {
        Target target = make_target(m, hardware);
        set_data_parallel(target, {4, 1, "NVLink-4", links().intra});
        return predict(m, target, expand_plan_name(plan, m.layout()), 4);
      };
      const Estimate ranks = ranks_of(timed), untimed = ranks_of(*model_);
      ASSERT_NE(ranks.seconds, untimed.seconds) << hardware << ": the timed points change the step";
      EXPECT_DOUBLE_EQ(e.peak_bytes, ranks.peak_bytes) << hardware << " " << plan;
      EXPECT_NEAR(e.iteration_seconds, ranks.seconds, 1e-9 * ranks.seconds) << hardware << " " << plan;
    }
  }
}

// Reduced after backward (Megatron-LM without --overlap-grad-reduce), the
// gradients leave in one all-reduce once backward is done: all of it is
// exposed, where buckets behind backward hide all but the last.
TEST(DataParallelGradients, ReducedAfterBackwardTheyAreExposedWhole) {
  // Wide enough for its gradients (48 MB) to fill more than one 25 MiB bucket.
  NetworkConfig config = load_network_config("llama-tiny");
  auto& body = std::get<TransformerConfig>(config.body);
  body.layers = 4, body.d_model = 512, body.mlp_width = 1408;
  const LayerModel wide = profiler::quick_fit(config);
  ParallelLayout l;
  l.data = 4, l.micro_batch = 2;
  LayoutRequest after{"", links()};
  after.overlap_grad_reduce = false;
  const LayoutEstimate overlapped = estimate_layout(wide, l, {"", links()}, "keep");
  const LayoutEstimate exposed = estimate_layout(wide, l, after, "keep");
  EXPECT_TRUE(overlapped.overlap_grad_reduce);
  EXPECT_FALSE(exposed.overlap_grad_reduce);
  double gradients = 0;
  for (const LayerFit& layer : wide.layers) gradients += static_cast<double>(layer.trainable_bytes());
  ASSERT_GT(gradients, default_bucket_bytes);
  const double whole = links().intra.seconds(gradients, 4);
  EXPECT_NEAR(exposed.stages[0].data_comm_seconds, whole, 1e-9 * whole);
  EXPECT_LT(overlapped.stages[0].data_comm_seconds, whole);
  const double hidden = exposed.stages[0].data_comm_seconds - overlapped.stages[0].data_comm_seconds;
  EXPECT_NEAR(exposed.iteration_seconds - overlapped.iteration_seconds, hidden, 1e-9 * exposed.iteration_seconds);
  EXPECT_DOUBLE_EQ(exposed.peak_bytes, overlapped.peak_bytes);  // ZeRO-0: the exchange's gradient copy either way
}

// Laid out for Megatron-LM, a GPU holds the static state as Megatron-LM
// does in bf16 (sharding_test: 18 bytes a parameter, 6 + 12/d with its
// distributed optimizer), no copies of the weights cast to compute with and
// no gradient copy for the exchange; every other byte of the step as
// measured. In fp32 its static state is what was measured, still without
// the gradient copy.
TEST_F(LayoutPricing, LaidOutForMegatronAGpuHoldsWhatMegatronHolds) {
  NetworkConfig config = load_network_config("llama-tiny");
  std::get<TransformerConfig>(config.body).layers = 4;
  const LayerModel amp = profiler::quick_fit(config, 0, "amp-bf16");
  double parameters = 0, trainable = 0, copies = 0;
  for (const LayerFit& layer : amp.layers) {
    parameters += static_cast<double>(layer.parameter_bytes);
    trainable += static_cast<double>(layer.trainable_bytes());
    copies += static_cast<double>(layer.parameter_copy_bytes);
  }
  ASSERT_GT(copies, 0) << "autocast keeps its bf16 weights for backward";
  const LayoutRequest megatron{"", links(), std::nullopt, Engine::megatron};
  for (int zero : {0, 1}) {
    ParallelLayout l;
    l.data = 4, l.zero_stage = zero, l.micro_batch = 2;
    const LayoutEstimate ours = estimate_layout(amp, l, {"", links()}, "keep");
    const LayoutEstimate theirs = estimate_layout(amp, l, megatron, "keep");
    const RankStatic held = shard(megatron_static(parameters, trainable), 4, zero);
    EXPECT_NEAR(theirs.stages[0].static_bytes, held.total(), 1) << "ZeRO-" << zero;
    EXPECT_EQ(theirs.stages[0].weight_copies_bytes, 0);
    EXPECT_EQ(ours.stages[0].weight_copies_bytes, copies);
    // The peak moves by the static state's difference, less the exchange's
    // gradient copy and the weight copies that were held there (at most all).
    const double moved = held.total() - ours.stages[0].static_bytes - whole_static(amp, DataParallel{}).gradients;
    EXPECT_LE(theirs.peak_bytes, ours.peak_bytes + moved + 1) << "ZeRO-" << zero;
    EXPECT_GE(theirs.peak_bytes, ours.peak_bytes + moved - copies - 1) << "ZeRO-" << zero;
  }
  ParallelLayout l;
  l.data = 4, l.micro_batch = 2;
  const LayoutEstimate fp32 = estimate_layout(*model_, l, {"", links(), std::nullopt, Engine::megatron}, "keep");
  const LayoutEstimate measured = estimate_layout(*model_, l, {"", links()}, "keep");
  EXPECT_DOUBLE_EQ(fp32.stages[0].static_bytes, measured.stages[0].static_bytes);
  EXPECT_NEAR(fp32.peak_bytes, measured.peak_bytes - whole_static(*model_, DataParallel{}).gradients, 1);
}

TEST_F(LayoutPricing, PipelineStagesHoldTheirBlocksAndTheirMicroBatchesInFlight) {
  ParallelLayout l;
  l.pipeline = 2, l.micro_batches = 4, l.micro_batch = 2;
  const LayoutEstimate e = estimate_layout(*model_, l, {"", links()}, "keep");
  ASSERT_EQ(e.stages.size(), 2u);
  EXPECT_EQ(e.stages[0].span.first_block, 0);
  EXPECT_EQ(e.stages[1].span.first_block, 2);
  // The weights are split between the stages (llama-tiny's head is its own).
  EXPECT_NEAR(e.stages[0].static_bytes + e.stages[1].static_bytes, model_->static_bytes, 1);
  // 1F1B: the first stage holds two micro-batches, the last one; each what its blocks save.
  EXPECT_EQ(e.stages[0].in_flight, 2);
  EXPECT_EQ(e.stages[1].in_flight, 1);
  // A micro-batch in flight holds what the stage's layers saved for backward
  // (under keep the last stage's first layer saves the activation it
  // received as it is): not the stage's output, whose values go once sent,
  // nor its gradient, which one micro-batch at a time holds.
  for (size_t s = 0; s < 2; ++s) {
    double saved = 0;
    for (const LayerFit& layer : model_->layers) {
      const int block = block_of_path(layer.path);
      const bool on_stage = block >= 0 ? block >= e.stages[s].span.first_block && block < e.stages[s].span.end_block
                                       : (layer.kind == LayerKind::embedding) == (s == 0);
      if (!on_stage) continue;
      for (const auto& t : layer.saved) {
        if (t.per_sample && t.storage == tensor_key(layer.path, t.slot)) saved += t.storage_bytes_per_sample;
      }
    }
    EXPECT_NEAR(e.stages[s].activation_bytes, l.micro_batch * saved, 1e-6 * saved) << "stage " << s;
  }
  // The iteration: the slower stage's micro-batch four times, and once more for the bubble.
  const double slowest = std::max(e.stages[0].micro_batch_seconds, e.stages[1].micro_batch_seconds);
  EXPECT_NEAR(e.bubble_seconds, slowest, 1e-12);
  EXPECT_GT(e.iteration_seconds, 5 * slowest);
}

// Interleaved, each of a stage's v chunks hands the stream on and takes its
// gradient back: per micro-batch a middle stage sends 2v times, an end 2v - 1
// (Narayanan et al. 2021: v times the communication of 1F1B), each send
// the stream of a micro-batch at the link's bandwidth and latency.
TEST_F(LayoutPricing, InterleavedStagesSendOncePerChunkBoundary) {
  ParallelLayout l;
  l.pipeline = 2, l.micro_batches = 4, l.micro_batch = 2;
  const auto sends = [&](int v) {
    l.virtual_stages = v;
    return estimate_layout(*model_, l, {"", links()}, "keep").stages;
  };
  const auto one = sends(1), two = sends(2);
  for (size_t s = 0; s < 2; ++s) {
    const double send = one[s].pipeline_comm_seconds;  // an end of two stages: one send a micro-batch
    ASSERT_GT(send, 0) << "stage " << s;
    EXPECT_NEAR(two[s].pipeline_comm_seconds, 3 * send, 1e-12) << "stage " << s;
    EXPECT_NEAR(two[s].micro_batch_seconds - one[s].micro_batch_seconds, 2 * send, 1e-12) << "stage " << s;
  }
}

TEST(ExpertParallelism, EachRankHoldsItsExpertsAndSendsTheirTokens) {
  const LayerModel whole = profiler::quick_fit("mixtral-tiny");
  const TransformerShape shape = transformer_shape(whole, "mixtral");
  EXPECT_EQ(shape.experts, 4);
  ParallelLayout l;
  l.expert = 2, l.data = 2, l.micro_batch = 2;
  const LayerModel rank = split_across_ranks(whole, shape, l);
  double dispatched = 0;
  for (size_t j = 0; j < whole.layers.size(); ++j) {
    const LayerFit& w = whole.layers[j];
    const LayerFit& r = rank.layers[j];
    const bool expert = w.path.find(".moe.experts.") != std::string::npos;
    // Half the experts a rank, each with twice the tokens: its weights halved, its activations as they were.
    EXPECT_EQ(r.parameter_bytes, expert ? w.parameter_bytes / 2 : w.parameter_bytes) << w.path;
    EXPECT_EQ(r.output_bytes_per_sample, w.output_bytes_per_sample) << w.path;
    if (expert && w.path.size() > 4 && w.path.compare(w.path.size() - 4, 4, ".fc1") == 0) {
      dispatched += w.saved.front().storage_bytes_per_sample;
    }
  }
  // Each expert's tokens leave and come back in forward and again in backward, over the expert group.
  const LayoutEstimate e = estimate_layout(whole, l, {"", links()}, "keep");
  double expected = 0;
  for (size_t j = 0; j < whole.layers.size(); ++j) {
    const LayerFit& w = whole.layers[j];
    if (w.path.find(".moe.experts.") != std::string::npos && w.path.compare(w.path.size() - 4, 4, ".fc1") == 0) {
      expected += 4 * links().intra.gather_seconds(2 * w.saved.front().storage_bytes_per_sample, 2);
    }
  }
  EXPECT_GT(dispatched, 0);
  EXPECT_NEAR(e.stages[0].expert_comm_seconds, expected, 1e-12);
  l.expert = 3;
  EXPECT_THROW(estimate_layout(whole, l, {"", links()}, "keep"), InputError);  // 4 experts do not split 3 ways
}

// Pipeline stages of as many blocks but of other kinds hold their own:
// DeepSeek-V3-tiny with 8 blocks, its first dense, in 4 stages of 2; the
// second stage (the dense block's neighbour and a mixture) and the third
// (two mixtures) each hold their own blocks' weights, gradients and state.
TEST(PipelineStages, StagesOfAsManyBlocksOfOtherKindsHoldTheirOwn) {
  NetworkConfig config = load_network_config("deepseek-v3-tiny");
  config.document["layers"] = 8;
  config.document["moe"]["dense_blocks"] = {0, 1, 2};
  const LayerModel whole = profiler::quick_fit(with_expert_routing(config, 1.0 / 8));
  ParallelLayout l;
  l.pipeline = 4, l.micro_batch = 1, l.micro_batches = 4;
  const LayoutEstimate e = estimate_layout(whole, l, {"", links()}, "keep");
  ASSERT_EQ(e.stages.size(), 4u);
  double weights[2] = {0, 0};  // blocks 2-3, 4-5
  for (const LayerFit& layer : whole.layers) {
    const int b = block_of_path(layer.path);
    if (b >= 2 && b < 6) weights[(b - 2) / 2] += static_cast<double>(layer.parameter_bytes);
  }
  ASSERT_GT(weights[1], weights[0]);
  // fp32 AdamW: a stage's state in proportion to its weights.
  EXPECT_NEAR(e.stages[2].static_bytes / e.stages[1].static_bytes, weights[1] / weights[0], 1e-9 * weights[1] / weights[0]);
}

// Weights a layer borrows are copied to the last stage once for each owner
// elsewhere: DeepSeek-V3-tiny with a multi-token prediction module in two
// stages, the last holding block 2, the heads and the module. Untied, the
// module's embedding borrows the first stage's token embedding (a copy) and
// its head the main head beside it (none); tied, the main head and both of
// the module's borrow the embedding (one copy). Where owners are not
// recorded, every borrower counts a copy, as before owners were.
TEST(PipelineStages, TheLastStageCopiesEachOwnersWeightsOnce) {
  for (const bool tied : {false, true}) {
    nlohmann::json doc = load_network_config("deepseek-v3-mtp-tiny").document;
    doc["tied_head"] = tied;
    const LayerModel whole = profiler::quick_fit(with_expert_routing(parse_network_config(doc, "mtp.json"), 1.0 / 8));
    const StageSpan last = pipeline_stages(3, 2)[1];
    const auto with = [&](auto change) {
      LayerModel changed = whole;
      for (LayerFit& l : changed.layers) change(l);
      return stage_model(changed, last).static_bytes;
    };
    int borrowers = 0;
    for (const LayerFit& l : whole.layers) {
      if (l.shared_trainable_bytes == 0) continue;
      ++borrowers;
      EXPECT_EQ(l.shares_weights_of, tied || l.path == "mtp.0.emb" ? "tok_emb" : "lm_head") << l.path;
    }
    ASSERT_EQ(borrowers, tied ? 3 : 2);
    // One borrower of the embedding alone (the module's) gives the same stage.
    const double once = with([](LayerFit& l) {
      if (l.path != "mtp.0.emb") l.shared_trainable_bytes = 0;
    });
    EXPECT_DOUBLE_EQ(stage_model(whole, last).static_bytes, once) << (tied ? "tied" : "untied");
    const double each = with([](LayerFit& l) { l.shares_weights_of.clear(); });
    EXPECT_GT(each, once) << (tied ? "tied" : "untied");
  }
}

// A stage's state bytes, found without making the stage, are its model's:
// DeepSeek-V3-tiny with its multi-token prediction module (experts apart,
// borrowed weights copied to the last stage) cut into 1 to 3 stages.
TEST(PipelineStages, AStagesStateBytesAreItsModelsWithoutMakingIt) {
  const LayerModel whole = profiler::quick_fit(with_expert_routing(load_network_config("deepseek-v3-mtp-tiny"), 1.0 / 8));
  for (int stages = 1; stages <= 3; ++stages) {
    for (const StageSpan& span : pipeline_stages(3, stages)) {
      const StateBytes quick = stage_state(whole, span), made = state_bytes(stage_model(whole, span));
      const std::string where = std::to_string(stages) + " stages, from block " + std::to_string(span.first_block);
      EXPECT_EQ(quick.parameters, made.parameters) << where;
      EXPECT_EQ(quick.trainable, made.trainable) << where;
      EXPECT_EQ(quick.expert_parameters, made.expert_parameters) << where;
      if (span.end_block == 3) EXPECT_GT(quick.expert_parameters, 0) << where;  // the mixture block's
      EXPECT_EQ(quick.expert_trainable, made.expert_trainable) << where;
      EXPECT_EQ(quick.static_bytes, made.static_bytes) << where;
      EXPECT_EQ(quick.half_precision, made.half_precision) << where;
    }
  }
}

// Tensor parallelism's all-reduces of the stream on Qwen-MoE's blocks: the
// embedding's once, each row-parallel projection's in forward and backward
// (attention's, the dense first block's fc2), and a mixture's output once
// a pass however many experts and shared expert add to it: 13 in all, not
// the 17 of a shared expert's fc2 summed on its own.
TEST(TensorParallelism, AMixturesOutputIsSummedOnceAPass) {
  const LayerModel whole = profiler::quick_fit("qwen-moe-tiny");
  ParallelLayout l;
  l.tensor = 2, l.micro_batch = 2;
  const LayoutEstimate e = estimate_layout(whole, l, {"", links()}, "keep");
  double stream = 0;
  for (const LayerFit& layer : whole.layers) {
    if (layer.kind == LayerKind::embedding) stream = l.micro_batch * layer.output_bytes_per_sample;
  }
  ASSERT_GT(stream, 0);
  EXPECT_NEAR(e.stages[0].tensor_comm_seconds, 13 * links().intra.seconds(stream, 2), 1e-12);
}

TEST(PipelineSchedule, MicroBatchesInFlightAreMegatronsSchedules) {
  ParallelLayout l;
  l.pipeline = 4, l.micro_batches = 16;
  for (int s = 0; s < 4; ++s) EXPECT_EQ(in_flight_micro_batches(s, l), 4 - s);
  // Interleaved: the first stage holds p(1 + (p-1)/(pv)) micro-batches' worth (Megatron's memory report).
  l.virtual_stages = 2;
  EXPECT_DOUBLE_EQ(in_flight_micro_batches(0, l), 4 * (1 + 3.0 / 8));
  l.micro_batches = 2, l.virtual_stages = 1;
  EXPECT_EQ(in_flight_micro_batches(0, l), 2);  // never more than the iteration's
  // Blocks p does not divide go to the stages before the last, from the second-to-last back.
  const auto spans = pipeline_stages(10, 4);
  EXPECT_EQ(spans[0].end_block - spans[0].first_block, 2);
  EXPECT_EQ(spans[1].end_block - spans[1].first_block, 3);
  EXPECT_EQ(spans[2].end_block - spans[2].first_block, 3);
  EXPECT_EQ(spans[3].end_block - spans[3].first_block, 2);
  EXPECT_THROW(pipeline_stages(3, 4), InputError);
}

TEST_F(LayoutPricing, TensorParallelismCostsItsCollectivesOnTheLink) {
  ParallelLayout l;
  l.tensor = 2, l.sequence = true, l.micro_batch = 4;
  const LayoutEstimate e = estimate_layout(*model_, l, {"", links()}, "keep");
  // Two all-reduces of the stream a row-parallel projection (proj, fc2) and one for the embedding,
  // as reduce-scatter/all-gather halves: 4 blocks x 2 x 2 + 1.
  const double stream = 4 * model_->layers[0].output_bytes_per_sample;
  const double one = 2 * links().intra.gather_seconds(stream, 2);
  EXPECT_NEAR(e.stages[0].tensor_comm_seconds, (4 * 2 * 2 + 1) * one, 1e-12);
  ParallelLayout recomputed = l;
  const LayoutEstimate r = estimate_layout(*model_, recomputed, {"", links()}, "recompute-all");
  EXPECT_NEAR(r.stages[0].tensor_comm_seconds, (4 * 2 * 3 + 1) * one, 1e-12);  // the recompute's forward again
}

TEST_F(LayoutPricing, TheSearchKeepsToTheBudgetAndFindsTheFastest) {
  const LayoutPricer pricer(*model_, {"", links()});
  ParallelLayout one;
  one.micro_batch = 4;
  const double alone = pricer.estimate(one, "keep").peak_bytes;
  LayoutQuestion q;
  q.gpus = 4;
  q.global_batch = 16;
  q.budget_bytes = 0.9 * alone;
  q.plans = {"keep", "recompute-all"};
  const LayoutAnswer a = search_layouts(pricer, q, 1000);
  ASSERT_FALSE(a.best.empty());
  double fastest = 0;
  for (size_t i = 0; i < a.best.size(); ++i) {
    EXPECT_LE(a.best[i].peak_bytes, q.budget_bytes);
    EXPECT_EQ(a.best[i].layout.gpus(), 4);
    EXPECT_EQ(a.best[i].layout.global_batch(), 16);
    if (i > 1) EXPECT_GE(a.best[i - 1].tokens_per_s, a.best[i].tokens_per_s);  // the rest, fastest first
    fastest = std::max(fastest, a.best[i].tokens_per_s);
  }
  // The first is the simplest of those within the model's error of the fastest, and says why.
  const auto parts = [](const LayoutEstimate& e) {
    const ParallelLayout& l = e.layout;
    return (l.tensor > 1) + (l.context > 1) + (l.pipeline > 1) + (l.virtual_stages > 1) + (l.expert > 1) + l.offload_optimizer +
           (e.plan.find("recompute") != std::string::npos);
  };
  EXPECT_GE(a.best[0].tokens_per_s, (1 - layout_time_tolerance) * fastest);
  for (const LayoutEstimate& e : a.best) {
    if (e.tokens_per_s >= (1 - layout_time_tolerance) * fastest) EXPECT_LE(parts(a.best[0]), parts(e)) << e.layout.label();
  }
  EXPECT_FALSE(a.why.empty());
  // Nothing fits below a rank's least static bytes: every choice pruned or over.
  q.budget_bytes = 1000;
  const LayoutAnswer none = search_layouts(pricer, q);
  EXPECT_TRUE(none.best.empty());
  EXPECT_GT(none.pruned, 0);
  // An engine's limits: Megatron's ZeRO stages (0, its distributed optimizer's 1), even stages.
  q.budget_bytes = 0.9 * alone;
  q.zero_stages = {0, 1};
  q.even_stages = true;
  for (const auto& e : search_layouts(pricer, q, 1000).best) {
    EXPECT_LE(e.layout.zero_stage, 1);
    EXPECT_EQ(4 % (e.layout.pipeline * e.layout.virtual_stages), 0);
  }
  // A fixed degree the network cannot take is the layout's error.
  q.tensor = 3;
  q.gpus = 3;
  EXPECT_THROW(search_layouts(pricer, q), InputError);
}

// A layout's time floor is under what any plan takes on it, and on one GPU
// under keep it is the step less its optimizer step (nothing overlaps).
TEST_F(LayoutPricing, NoPlanIsFasterThanALayoutsTimeFloor) {
  const LayoutPricer pricer(*model_, {"H100-SXM-80GB", links()});  // a host link to swap over
  ParallelLayout one;
  one.micro_batch = 4;
  const LayoutEstimate alone = pricer.estimate(one, "keep");
  const double floor = pricer.time_floor_seconds(one);
  EXPECT_NEAR(floor, alone.iteration_seconds - alone.stages[0].optimizer_seconds, 1e-9 * floor);
  int checked = 0;
  for (int t : {1, 2}) {
    for (int p : {1, 2, 4}) {
      for (int zero : {0, 1, 3}) {
        for (int mb : {1, 4}) {
          ParallelLayout l;
          l.tensor = t, l.pipeline = p, l.data = 8 / (t * p), l.zero_stage = zero, l.sequence = t > 1;
          l.micro_batch = mb, l.micro_batches = 2 * p;
          if (l.data < 2 && zero > 0) continue;
          const double least = pricer.time_floor_seconds(l);
          EXPECT_GT(least, 0) << l.label();
          for (const std::string plan : {"keep", "recompute-all", "quantize-4", "quantize-2+swap"}) {
            EXPECT_LE(least, pricer.estimate(l, plan).iteration_seconds) << l.label() << " " << plan;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 50);
}

// Made from a rank's layers, without a stage, the floor of a layout with no
// data-parallel exchange is its slowest stage's keep micro-batch (its
// layers, its share of the rest of the step, its communication), as the
// stage priced: each stage's layers and rest carried to the GPU as its own.
TEST_F(LayoutPricing, ATimeFloorIsTheSlowestStagesKeepMicroBatch) {
  const LayoutPricer pricer(*model_, {"H100-SXM-80GB", links()});
  int checked = 0;
  for (int t : {1, 2}) {
    for (int p : {2, 4}) {
      for (int mb : {1, 4}) {
        ParallelLayout l;
        l.tensor = t, l.pipeline = p, l.data = 1, l.sequence = t > 1;
        l.micro_batch = mb, l.micro_batches = 2 * p;
        const double floor = pricer.time_floor_seconds(l);
        const LayoutEstimate keep = pricer.estimate(l, "keep");
        double slowest = 0;
        for (const StageEstimate& s : keep.stages) slowest = std::max(slowest, s.micro_batch_seconds);
        const double turns = l.micro_batches + (p - 1.0) / l.virtual_stages;
        EXPECT_NEAR(floor, turns * slowest, 1e-9 * floor) << l.label();
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 8);
}

// The layouts a search skips by their time floor are none of its answer: the
// answer of the fastest one or three is the head of the answer of all that
// fit (none skipped), to the bit, and says the same why.
TEST_F(LayoutPricing, LayoutsSkippedByTheirTimeFloorAreNoneOfTheAnswer) {
  const LayoutPricer pricer(*model_, {"", links()});
  LayoutQuestion q;
  q.gpus = 8;
  q.global_batch = 64;
  q.budget_bytes = 1e15;
  q.plans = {"keep", "recompute-all", "quantize-4"};
  const LayoutAnswer all = search_layouts(pricer, q, 1000000);
  EXPECT_EQ(all.skipped, 0);
  for (size_t keep : {1u, 3u}) {
    const LayoutAnswer some = search_layouts(pricer, q, keep);
    EXPECT_GT(some.skipped, 0) << keep;
    EXPECT_LT(some.priced, all.priced) << keep;
    EXPECT_EQ(some.why, all.why) << keep;
    ASSERT_EQ(some.best.size(), keep);
    for (size_t i = 0; i < keep; ++i) {
      EXPECT_EQ(some.best[i].layout.label(), all.best[i].layout.label()) << keep;
      EXPECT_EQ(some.best[i].plan, all.best[i].plan) << keep;
      EXPECT_EQ(some.best[i].tokens_per_s, all.best[i].tokens_per_s) << keep;
    }
  }
}

// Two searches' answers, equal to the bit: the layouts that fit, the
// nearest where none does, the counts and the reason the first leads.
void expect_same_answers(const LayoutAnswer& a, const LayoutAnswer& b) {
  EXPECT_EQ(a.priced, b.priced);
  EXPECT_EQ(a.pruned, b.pruned);
  EXPECT_EQ(a.skipped, b.skipped);
  EXPECT_EQ(a.why, b.why);
  ASSERT_EQ(a.best.size(), b.best.size());
  for (size_t i = 0; i < a.best.size(); ++i) {
    EXPECT_EQ(a.best[i].layout.label(), b.best[i].layout.label());
    EXPECT_EQ(a.best[i].plan, b.best[i].plan);
    EXPECT_EQ(a.best[i].peak_bytes, b.best[i].peak_bytes);
    EXPECT_EQ(a.best[i].tokens_per_s, b.best[i].tokens_per_s);
  }
  ASSERT_EQ(a.nearest.has_value(), b.nearest.has_value());
  if (a.nearest) EXPECT_EQ(a.nearest->layout.label(), b.nearest->layout.label());
}

// A pricer that lets go of all but two stages builds them again as they
// were: the same layouts, peaks and tokens/s, to the bit, as one keeping
// all, and skips the same micro-batches by the time floors it kept.
TEST_F(LayoutPricing, StagesLetGoAreBuiltAgainAsTheyWere) {
  LayoutRequest forgetful{"", links()};
  forgetful.stages_kept = 2;
  const LayoutPricer keeping(*model_, {"", links()}), forgetting(*model_, forgetful);
  LayoutQuestion q;
  q.gpus = 8;
  q.global_batch = 32;
  q.budget_bytes = 1e15;
  q.plans = {"keep", "recompute-all", "quantize-4"};
  q.workers = 1;  // one worker holds every stage the search built
  const LayoutAnswer all = search_layouts(keeping, q, 1000), some = search_layouts(forgetting, q, 1000);
  EXPECT_GT(keeping.stages_held(), 8u);
  EXPECT_LE(forgetting.stages_held(), 8u);  // two and a layout's stages
  expect_same_answers(all, some);
  const LayoutAnswer few = search_layouts(keeping, q, 3), few_again = search_layouts(forgetting, q, 3);
  EXPECT_GT(few.skipped, 0);
  expect_same_answers(few, few_again);
}

// Layouts priced on several threads are the layouts one thread finds, in
// its order, to the bit: those that fit, the nearest where none does, the
// counts, and the first error.
TEST_F(LayoutPricing, ManyWorkersFindWhatOneFinds) {
  LayoutQuestion q;
  q.gpus = 8;
  q.global_batch = 32;
  q.plans = {"keep", "recompute-all", "quantize-4"};
  ParallelLayout one_gpu;
  one_gpu.micro_batch = 4;
  const double alone = LayoutPricer(*model_, {"", links()}).estimate(one_gpu, "keep").peak_bytes;
  // Some fit, all of them kept or the fastest alone (others skipped by their
  // time floors as rounds find faster ones); none fits (the nearest found instead).
  for (const auto& [budget, keep] : {std::pair{0.5 * alone, 1000}, {0.5 * alone, 1}, {1e3, 1000}}) {
    q.budget_bytes = budget;
    q.workers = 1;
    const LayoutAnswer one = search_layouts(LayoutPricer(*model_, {"", links()}), q, keep);
    q.workers = 3;
    const LayoutAnswer many = search_layouts(LayoutPricer(*model_, {"", links()}), q, keep);
    EXPECT_GT(one.priced + one.pruned, 0);
    expect_same_answers(one, many);
  }
  q.budget_bytes = 0.5 * alone;
  q.plans = {"no-such-plan", "keep"};
  EXPECT_THROW(search_layouts(LayoutPricer(*model_, {"", links()}), q), InputError);
}

}  // namespace
}  // namespace papaya::model
