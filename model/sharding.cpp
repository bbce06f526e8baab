#include "model/sharding.h"

#include <string>

#include "model/error.h"

namespace papaya::model {

RankStatic rank_static(double parameters, int ranks, int zero_stage) {
  if (ranks < 1) throw InputError("--gpus " + std::to_string(ranks) + ": at least 1");
  if (zero_stage < 0 || zero_stage > 3) throw InputError("--zero " + std::to_string(zero_stage) + ": a ZeRO stage is 0 to 3");
  const auto share = [&](int from_stage) { return zero_stage >= from_stage ? 1.0 / ranks : 1.0; };
  return {4 * parameters * share(3), 4 * parameters * share(2), 8 * parameters * share(1)};
}

}  // namespace papaya::model
