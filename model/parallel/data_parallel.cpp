#include "model/parallel/data_parallel.h"

#include <algorithm>

namespace papaya::model {

RankStatic whole_static(const LayerModel& model) {
  double parameters = 0, trainable = 0;
  for (const LayerFit& layer : model.layers) {
    parameters += static_cast<double>(layer.parameter_bytes);
    trainable += static_cast<double>(layer.trainable_bytes());
  }
  return whole_static(parameters, trainable, model.static_bytes);
}

double static_bytes_per_rank(const LayerModel& model, const DataParallel& world) {
  return shard(whole_static(model), world.ranks, world.zero_stage).total();
}

double rank_bytes_shift(const LayerModel& model, const DataParallel& world) {
  if (!world.active()) return 0;
  const RankStatic whole = whole_static(model);
  double largest = 0;
  for (const LayerFit& layer : model.layers) largest = std::max(largest, static_cast<double>(layer.parameter_bytes));
  return shard(whole, world.ranks, world.zero_stage).total() - whole.total() +
         exchange_buffer_bytes(whole, world.ranks, world.zero_stage, world.bucket_bytes, largest);
}

}  // namespace papaya::model
