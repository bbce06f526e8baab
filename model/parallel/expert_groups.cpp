#include "model/parallel/expert_groups.h"

namespace papaya::model {

double optimizer_ranks(const LayerModel& model, const DataParallel& world) {
  if (world.expert_ranks_apart() == 0) return world.ranks;
  const double held = rank_static(model, world).optimizer, whole = whole_static(model, world).optimizer;
  return held > 0 ? whole / held : world.ranks;
}

}  // namespace papaya::model
