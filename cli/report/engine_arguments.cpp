#include "cli/report/engine_arguments.h"

#include <sstream>

#include "model/error.h"
#include "model/fp8_recipe.h"
#include "model/strategy_table.h"

namespace papaya::cli {
namespace {

// bf16 weights and activations: bf16, autocast's, and the FP8 recipes' (whose other layers are bf16).
bool half(const std::string& precision) {
  return precision == "bf16" || precision == "amp-bf16" || model::is_fp8_precision(precision);
}

// One argument a line, ending in " \" for the shell to join them.
void argument_line(std::ostringstream& out, const std::string& text) { out << text << " \\\n"; }

}  // namespace

model::Engine emitted_engine(const std::string& name) {
  if (name == "megatron") return model::Engine::megatron;
  if (name == "torchtitan") return model::Engine::torchtitan;
  if (name == "papaya") return model::Engine::papaya;
  throw InputError("engine '" + name + "': megatron, torchtitan or papaya");
}

std::string papaya_arguments(const model::LayoutEstimate& e, const std::string& precision) {
  const model::ParallelLayout& l = e.layout;
  model::check_runs_on(l, model::Engine::papaya);  // the search keeps to it; a layout given whole may not
  std::ostringstream out;
  const auto arg = [&](const std::string& text) { argument_line(out, text); };
  arg("--nproc " + std::to_string(l.gpus()));
  if (l.tensor > 1) {
    arg("--tp " + std::to_string(l.tensor));
    arg(std::string("--sp ") + (l.sequence ? "on" : "off"));
  }
  if (l.pipeline > 1) {
    arg("--pp " + std::to_string(l.pipeline));
    arg("--micro-batches " + std::to_string(l.micro_batches));
  }
  if (l.zero_stage > 0) arg("--zero " + std::to_string(l.zero_stage));
  arg("--batch " + std::to_string(l.micro_batch));
  arg("--plan " + e.plan);
  arg("--precision " + precision);
  return out.str();
}

std::string megatron_arguments(const model::LayoutEstimate& e, const model::TransformerShape& shape,
                               const std::string& precision) {
  const model::ParallelLayout& l = e.layout;
  std::ostringstream out;
  const auto arg = [&](const std::string& text) { argument_line(out, text); };
  arg("--tensor-model-parallel-size " + std::to_string(l.tensor));
  arg("--pipeline-model-parallel-size " + std::to_string(l.pipeline));
  if (l.virtual_stages > 1) {
    arg("--num-layers-per-virtual-pipeline-stage " + std::to_string(shape.blocks / (l.pipeline * l.virtual_stages)));
  }
  arg("--context-parallel-size " + std::to_string(l.context));
  if (shape.experts > 0) arg("--expert-model-parallel-size " + std::to_string(l.expert));
  if (l.sequence) arg("--sequence-parallel");
  // Megatron-LM's own attention holds the probabilities; flash attention does not.
  arg(std::string("--attention-backend ") + (shape.fused_attention ? "flash" : "unfused"));
  if (e.plan == "recompute-all") {
    arg("--recompute-granularity full");
    arg("--recompute-method uniform");
    arg("--recompute-num-layers 1");
  } else if (e.plan == model::recompute_attention_term) {
    arg("--recompute-granularity selective");
    arg("--recompute-modules core_attn");
  }
  arg("--micro-batch-size " + std::to_string(l.micro_batch));
  arg("--global-batch-size " + std::to_string(l.global_batch()));
  arg("--seq-length " + std::to_string(shape.tokens));
  if (shape.prediction_modules > 0) {
    arg("--mtp-num-layers " + std::to_string(shape.prediction_modules));
    std::ostringstream scale;
    scale << shape.prediction_loss_scale;
    arg("--mtp-loss-scaling-factor " + scale.str());
  }
  // Priced overlapped unless asked otherwise: Megatron-LM's default is not to.
  if (l.data * l.context > 1 && e.overlap_grad_reduce) arg("--overlap-grad-reduce");
  if (l.zero_stage >= 1) arg("--use-distributed-optimizer");
  if (l.offload_optimizer) {
    arg("--optimizer-cpu-offload");
    arg("--use-precision-aware-optimizer");  // which --optimizer-cpu-offload requires
  }
  if (half(precision)) arg("--bf16");
  switch (model::fp8_recipe_of(precision)) {
    case model::Fp8Recipe::none: break;
    case model::Fp8Recipe::rowwise:
      throw InputError("--emit megatron: precision fp8-rowwise is torchao's; Megatron-LM runs fp8-delayed or fp8-tensorwise");
    case model::Fp8Recipe::tensorwise:
      arg("--fp8-format hybrid");
      arg("--fp8-recipe tensorwise");
      break;
    case model::Fp8Recipe::delayed:
      arg("--fp8-format hybrid");
      arg("--fp8-recipe delayed");
      arg("--fp8-amax-history-len " + std::to_string(model::fp8_amax_history_length));
      arg("--fp8-amax-compute-algo max");
      break;
  }
  return out.str();
}

std::string torchtitan_config(const model::LayoutEstimate& e, const model::TransformerShape& shape,
                              const std::string& precision) {
  if (!shape.fused_attention) {
    throw InputError(
        "--emit torchtitan: torchtitan's attention is fused (scaled_dot_product_attention); this network's is "
        "materialized: lay it out with --attention fused");
  }
  if (shape.prediction_modules > 0) {
    throw InputError("--emit torchtitan: torchtitan's job config has no multi-token prediction; this network has " +
                     std::to_string(shape.prediction_modules) +
                     " module(s) (multi_token_prediction in its config): emit it for megatron, or import it without --mtp");
  }
  const model::ParallelLayout& l = e.layout;
  const bool fsdp = l.zero_stage >= 2;
  std::ostringstream out;
  out << "[parallelism]\n";
  out << "data_parallel_replicate_degree = " << (fsdp ? 1 : l.data) << "\n";
  out << "data_parallel_shard_degree = " << (fsdp ? l.data : 1) << "\n";
  // FSDP2 that keeps the gathered weights from forward to backward shards what ZeRO-2 does.
  if (fsdp) out << "fsdp_reshard_after_forward = \"" << (l.zero_stage == 3 ? "always" : "never") << "\"\n";
  out << "tensor_parallel_degree = " << l.tensor << "\n";
  out << "pipeline_parallel_degree = " << l.pipeline << "\n";
  if (l.pipeline > 1) {
    out << "pipeline_parallel_schedule = \"" << (l.virtual_stages > 1 ? "Interleaved1F1B" : "1F1B") << "\"\n";
    out << "pipeline_parallel_microbatch_size = " << l.micro_batch << "\n";
    out << "pipeline_parallel_layers_per_stage = " << shape.blocks / (l.pipeline * l.virtual_stages) << "\n";
    out << "pipeline_parallel_first_stage_less_layers = 0\n";
    out << "pipeline_parallel_last_stage_less_layers = 0\n";
  }
  out << "context_parallel_degree = " << l.context << "\n";
  if (shape.experts > 0) out << "expert_parallel_degree = " << l.expert << "\n";
  out << "\n[activation_checkpoint]\nmode = \"" << (e.plan == "recompute-all" ? "full" : "none") << "\"\n";
  out << "\n[training]\n";
  out << "local_batch_size = " << l.micro_batch * l.micro_batches << "\n";
  out << "global_batch_size = " << l.global_batch() << "\n";
  out << "seq_len = " << shape.tokens << "\n";
  out << "mixed_precision_param = \"" << (half(precision) ? "bfloat16" : "float32") << "\"\n";
  const model::Fp8Recipe recipe = model::fp8_recipe_of(precision);
  if (recipe == model::Fp8Recipe::delayed) {
    throw InputError(
        "--emit torchtitan: precision fp8-delayed is Transformer Engine's; torchtitan runs fp8-tensorwise or fp8-rowwise");
  }
  if (recipe != model::Fp8Recipe::none) {
    // The weights gathered in bf16, as papaya prices ZeRO-3's gathers.
    out << "\n[model]\nconverters = [\"float8\"]\n";
    out << "\n[float8]\nrecipe_name = \"" << (recipe == model::Fp8Recipe::rowwise ? "rowwise" : "tensorwise") << "\"\n";
    out << "enable_fsdp_float8_all_gather = false\n";
  }
  return out.str();
}

}  // namespace papaya::cli
