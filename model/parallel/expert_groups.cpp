#include "model/parallel/expert_groups.h"

namespace papaya::model {

int expert_ranks_apart(const DataParallel& world) {
  return world.expert_ranks > 0 && world.expert_ranks != world.ranks ? world.expert_ranks : 0;
}

double optimizer_ranks(const LayerModel& model, const DataParallel& world) {
  if (expert_ranks_apart(world) == 0) return world.ranks;
  const double held = rank_static(model, world).optimizer, whole = whole_static(model, world).optimizer;
  return held > 0 ? whole / held : world.ranks;
}

}  // namespace papaya::model
