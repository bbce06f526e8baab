#include "model/parallel/sharding.h"

#include <algorithm>
#include <string>

#include "model/error.h"

namespace papaya::model {

RankStatic whole_static(double parameter_bytes, double trainable_bytes, double static_bytes) {
  const double trained = parameter_bytes > 0 ? std::min(1.0, trainable_bytes / parameter_bytes) : 1.0;
  const double weights = std::min(parameter_bytes, static_bytes / (1 + trained));
  return {weights, weights * trained, static_bytes - weights * (1 + trained)};
}

RankStatic megatron_static(double parameter_bytes, double trainable_bytes) {
  return {parameter_bytes - trainable_bytes / 2, trainable_bytes, 3 * trainable_bytes};
}

RankStatic shard(const RankStatic& whole, int ranks, int zero_stage) {
  if (ranks < 1) throw InputError(std::to_string(ranks) + " GPUs: at least 1");
  if (zero_stage < 0 || zero_stage > 3) throw InputError("ZeRO stage " + std::to_string(zero_stage) + ": a ZeRO stage is 0 to 3");
  const auto share = [&](int from_stage) { return zero_stage >= from_stage ? 1.0 / ranks : 1.0; };
  return {whole.weights * share(3), whole.gradients * share(2), whole.optimizer * share(1)};
}

double exchange_buffer_bytes(const RankStatic& whole, int ranks, int zero_stage, double bucket_bytes, StateHolding holding) {
  if (ranks < 2 || holding == StateHolding::megatron) return 0;
  return zero_stage < 2 ? whole.gradients : std::min(whole.gradients, 2 * bucket_bytes);
}

}  // namespace papaya::model
