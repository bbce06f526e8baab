#include "model/parallel/engines.h"

#include <algorithm>

#include "model/error.h"

namespace papaya::model {

EngineLimits engine_limits(Engine engine, bool on_gpus) {
  EngineLimits limits;
  switch (engine) {
    case Engine::papaya:
      // One stage's micro-batches are a pipeline's alone; uneven stages are
      // split as evenly as the blocks allow (pipeline_stages).
      limits.zero_stages = {0, 1, 2};
      if (!on_gpus) limits.zero_stages.push_back(3);
      limits.even_stages = false;
      limits.interleaves = limits.splits_context = limits.splits_experts = limits.accumulates = false;
      break;
    case Engine::megatron:
      limits.plans = {"keep", "recompute-attention", "recompute-all"};
      limits.zero_stages = {0, 1};
      limits.offloads_optimizer = true;
      limits.reduces_after_backward = true;
      limits.holding = StateHolding::megatron;
      break;
    case Engine::torchtitan:
      limits.plans = {"keep", "recompute-all"};
      limits.zero_stages = {0, 2, 3};
      limits.sequence_with_tensor = true;
      break;
  }
  return limits;
}

std::string engine_name(Engine engine) {
  switch (engine) {
    case Engine::papaya: return "papaya's trainer";
    case Engine::megatron: return "Megatron-LM";
    case Engine::torchtitan: return "torchtitan";
  }
  return "";
}

void check_runs_on(const ParallelLayout& l, Engine engine, bool on_gpus) {
  const EngineLimits limits = engine_limits(engine, on_gpus);
  const auto require = [&](bool ok, const std::string& what) {
    if (!ok) throw InputError("layout " + l.label() + ": " + engine_name(engine) + " runs no " + what);
  };
  const std::vector<int>& zero = limits.zero_stages;
  const bool by_device = engine_limits(engine, !on_gpus).zero_stages != zero;
  require(std::find(zero.begin(), zero.end(), l.zero_stage) != zero.end(),
          "ZeRO stage " + std::to_string(l.zero_stage) + (by_device ? on_gpus ? " on GPUs" : " on CPU ranks" : ""));
  require(limits.offloads_optimizer || !l.offload_optimizer, "optimizer offload");
  require(limits.interleaves || l.virtual_stages == 1, "virtual pipeline stages");
  require(limits.splits_context || l.context == 1, "context parallelism");
  require(limits.splits_experts || l.expert == 1, "expert parallelism");
  require(limits.accumulates || l.pipeline > 1 || l.micro_batches == 1, "gradient accumulation without a pipeline");
  require(!limits.sequence_with_tensor || l.tensor == 1 || l.sequence, "tensor parallelism without sequence parallelism");
}

}  // namespace papaya::model
