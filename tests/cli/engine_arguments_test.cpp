// A layout as Megatron-LM's arguments, a torchtitan job config and papaya
// train's options, in the engines' own names (Megatron-LM core_v0.15.0
// megatron/training/arguments.py, torchtitan 238fa99
// torchtitan/config/job_config.py).
#include "cli/report/engine_arguments.h"

#include <gtest/gtest.h>

#include "model/error.h"

namespace papaya::cli {
namespace {

model::LayoutEstimate layout(int zero, const std::string& plan) {
  model::LayoutEstimate e;
  model::ParallelLayout& l = e.layout;
  l.tensor = 2, l.sequence = true, l.pipeline = 2, l.virtual_stages = 2, l.data = 2, l.zero_stage = zero;
  l.micro_batch = 2, l.micro_batches = 4;
  e.plan = plan;
  return e;
}

const model::TransformerShape shape{8, 4, 2, 0, 32, true};  // fused attention
const model::TransformerShape materialized{8, 4, 2, 0, 32, false};

void expect_lines(const std::string& text, const std::vector<std::string>& lines) {
  for (const auto& line : lines) EXPECT_NE(text.find(line), std::string::npos) << line << " in\n" << text;
}

TEST(EngineArguments, MegatronGetsItsOwnArgumentNames) {
  const std::string args = megatron_arguments(layout(1, "recompute-all"), shape, "bf16");
  expect_lines(args,
               {"--tensor-model-parallel-size 2 \\\n", "--pipeline-model-parallel-size 2 \\\n",
                "--num-layers-per-virtual-pipeline-stage 2 \\\n", "--context-parallel-size 1 \\\n", "--sequence-parallel \\\n",
                "--recompute-granularity full \\\n", "--recompute-method uniform \\\n", "--recompute-num-layers 1 \\\n",
                "--micro-batch-size 2 \\\n", "--global-batch-size 16 \\\n", "--seq-length 32 \\\n",
                "--use-distributed-optimizer \\\n", "--bf16 \\\n", "--attention-backend flash \\\n"});
  expect_lines(megatron_arguments(layout(1, "recompute-all"), materialized, "bf16"), {"--attention-backend unfused \\\n"});
  EXPECT_EQ(args.find("--expert-model-parallel-size"), std::string::npos);  // no experts
  model::LayoutEstimate offloaded = layout(1, "keep");
  offloaded.layout.offload_optimizer = true;
  expect_lines(megatron_arguments(offloaded, shape, "fp32"),
               {"--optimizer-cpu-offload \\\n", "--use-precision-aware-optimizer \\\n"});
  EXPECT_EQ(megatron_arguments(offloaded, shape, "fp32").find("--recompute"), std::string::npos);
  // Selective recompute: the attention core's.
  const std::string selective = megatron_arguments(layout(1, "recompute-attention"), shape, "bf16");
  expect_lines(selective, {"--recompute-granularity selective \\\n", "--recompute-modules core_attn \\\n"});
  EXPECT_EQ(selective.find("--recompute-method"), std::string::npos);
  // Multi-token prediction: Megatron-LM's modules and their loss's weight; none without them.
  model::TransformerShape predicting = shape;
  predicting.prediction_modules = 1, predicting.prediction_loss_scale = 0.3;
  expect_lines(megatron_arguments(layout(1, "keep"), predicting, "bf16"),
               {"--mtp-num-layers 1 \\\n", "--mtp-loss-scaling-factor 0.3 \\\n"});
  EXPECT_EQ(args.find("--mtp"), std::string::npos);
  // The gradients' reduction behind backward, as priced; Megatron-LM's
  // default is after it. Nothing to reduce without data-parallel ranks.
  expect_lines(args, {"--overlap-grad-reduce \\\n"});
  model::LayoutEstimate after = layout(1, "keep");
  after.overlap_grad_reduce = false;
  EXPECT_EQ(megatron_arguments(after, shape, "bf16").find("--overlap-grad-reduce"), std::string::npos);
  model::LayoutEstimate alone = layout(1, "keep");
  alone.layout.data = 1;
  EXPECT_EQ(megatron_arguments(alone, shape, "bf16").find("--overlap-grad-reduce"), std::string::npos);
}

TEST(EngineArguments, TorchtitanGetsItsOwnConfigKeys) {
  // Its attention is scaled_dot_product_attention: a materialized network's layout is refused, naming the flag.
  try {
    torchtitan_config(layout(3, "keep"), materialized, "bf16");
    ADD_FAILURE() << "a materialized network emitted for torchtitan";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--attention fused"), std::string::npos) << e.what();
  }
  expect_lines(torchtitan_config(layout(3, "keep"), shape, "fp32"),
               {"[parallelism]\n", "data_parallel_replicate_degree = 1\n", "data_parallel_shard_degree = 2\n",
                "fsdp_reshard_after_forward = \"always\"\n", "tensor_parallel_degree = 2\n", "pipeline_parallel_degree = 2\n",
                "pipeline_parallel_schedule = \"Interleaved1F1B\"\n", "pipeline_parallel_microbatch_size = 2\n",
                "pipeline_parallel_layers_per_stage = 2\n", "context_parallel_degree = 1\n",
                "[activation_checkpoint]\nmode = \"none\"\n", "[training]\n", "local_batch_size = 8\n",
                "global_batch_size = 16\n", "seq_len = 32\n", "mixed_precision_param = \"float32\"\n"});
  expect_lines(torchtitan_config(layout(0, "recompute-all"), shape, "bf16"),
               {"data_parallel_replicate_degree = 2\n", "data_parallel_shard_degree = 1\n", "mode = \"full\"\n",
                "mixed_precision_param = \"bfloat16\"\n"});
  expect_lines(torchtitan_config(layout(2, "keep"), shape, "bf16"), {"fsdp_reshard_after_forward = \"never\"\n"});
  // Its job config has no multi-token prediction: refused, naming what to do.
  model::TransformerShape predicting = shape;
  predicting.prediction_modules = 1;
  try {
    torchtitan_config(layout(3, "keep"), predicting, "bf16");
    ADD_FAILURE() << "multi-token prediction emitted for torchtitan";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("multi-token prediction"), std::string::npos) << e.what();
  }
}

// FP8: Megatron-LM runs Transformer Engine's recipes (delayed scaling with
// papaya's history, or current tensorwise scaling), torchtitan torchao's
// (its weights gathered in bf16, as papaya prices ZeRO-3); each refuses the
// other's, naming the precision.
TEST(EngineArguments, Fp8RecipesInEachEnginesNames) {
  expect_lines(megatron_arguments(layout(1, "keep"), shape, "fp8-delayed"),
               {"--bf16 \\\n", "--fp8-format hybrid \\\n", "--fp8-recipe delayed \\\n", "--fp8-amax-history-len 1024 \\\n",
                "--fp8-amax-compute-algo max \\\n"});
  expect_lines(megatron_arguments(layout(1, "keep"), shape, "fp8-tensorwise"), {"--fp8-recipe tensorwise \\\n"});
  EXPECT_EQ(megatron_arguments(layout(1, "keep"), shape, "amp-bf16").find("--fp8"), std::string::npos);
  EXPECT_THROW(megatron_arguments(layout(1, "keep"), shape, "fp8-rowwise"), InputError);
  expect_lines(torchtitan_config(layout(3, "keep"), shape, "fp8-rowwise"),
               {"mixed_precision_param = \"bfloat16\"\n", "[model]\nconverters = [\"float8\"]\n",
                "[float8]\nrecipe_name = \"rowwise\"\n", "enable_fsdp_float8_all_gather = false\n"});
  expect_lines(torchtitan_config(layout(3, "keep"), shape, "fp8-tensorwise"), {"recipe_name = \"tensorwise\"\n"});
  EXPECT_THROW(torchtitan_config(layout(3, "keep"), shape, "fp8-delayed"), InputError);
}

TEST(EngineArguments, PapayaGetsTheOptionsOfTrain) {
  model::LayoutEstimate e = layout(2, "quantize-4");
  e.layout.virtual_stages = 1;
  EXPECT_EQ(papaya_arguments(e, "bf16"),
            "--nproc 8 \\\n--tp 2 \\\n--sp on \\\n--pp 2 \\\n--micro-batches 4 \\\n--zero 2 \\\n--batch 2 \\\n"
            "--plan quantize-4 \\\n--precision bf16 \\\n");
  model::LayoutEstimate data = e;
  data.layout.tensor = data.layout.pipeline = data.layout.micro_batches = 1, data.layout.zero_stage = 0;
  data.layout.sequence = false;
  EXPECT_EQ(papaya_arguments(data, "fp32"), "--nproc 2 \\\n--batch 2 \\\n--plan quantize-4 \\\n--precision fp32 \\\n");
  // What papaya's trainer does not run: a fixed layout (predict's) is refused.
  EXPECT_THROW(papaya_arguments(layout(2, "keep"), "bf16"), InputError);  // interleaved
  data.layout.micro_batches = 2;
  EXPECT_THROW(papaya_arguments(data, "fp32"), InputError);  // accumulated without a pipeline
}

TEST(EngineArguments, EmitNamesTheEngines) {
  EXPECT_EQ(emitted_engine("megatron"), model::Engine::megatron);
  EXPECT_EQ(emitted_engine("torchtitan"), model::Engine::torchtitan);
  EXPECT_EQ(emitted_engine("papaya"), model::Engine::papaya);
  EXPECT_THROW(emitted_engine("deepspeed"), InputError);
}

}  // namespace
}  // namespace papaya::cli
