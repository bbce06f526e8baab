#include "model/parallel/expert_groups.h"

namespace papaya::model {

double optimizer_ranks(const LayerModel& model, const DataParallel& world) {
  return world.expert_ranks_apart() == 0 ? world.ranks : optimizer_ranks(state_bytes(model), world);
}

double optimizer_ranks(const StateBytes& state, const DataParallel& world) {
  if (world.expert_ranks_apart() == 0) return world.ranks;
  const double held = rank_static(state, world).optimizer, whole = whole_static(state, world).optimizer;
  return held > 0 ? whole / held : world.ranks;
}

}  // namespace papaya::model
