#include "model/parallel/data_parallel.h"

namespace papaya::model {

void DataParallel::check() const { shard({}, ranks, zero_stage); }  // shard's checks

bool computes_with_held_weights(const LayerModel& model, const DataParallel& world) {
  // In fp32 Megatron-LM holds what the profile measured: fp32 weights, their
  // gradients (its main gradients) and AdamW's two moments, no copies.
  return world.holding == StateHolding::megatron && model.precision != "fp32";
}

namespace {

// A model's parameter and trainable bytes, and its experts' part of them
// (counted only where `experts` asks).
struct ParameterBytes {
  double parameters = 0, trainable = 0, expert_parameters = 0, expert_trainable = 0;
};

ParameterBytes parameter_bytes(const LayerModel& model, bool experts) {
  ParameterBytes out;
  for (const LayerFit& layer : model.layers) {
    const auto parameters = static_cast<double>(layer.parameter_bytes), trainable = static_cast<double>(layer.trainable_bytes());
    out.parameters += parameters, out.trainable += trainable;
    if (experts && in_expert(layer.path)) out.expert_parameters += parameters, out.expert_trainable += trainable;
  }
  return out;
}

RankStatic static_of(const LayerModel& model, const DataParallel& world, const ParameterBytes& bytes) {
  if (computes_with_held_weights(model, world)) return megatron_static(bytes.parameters, bytes.trainable);
  return whole_static(bytes.parameters, bytes.trainable, model.static_bytes);
}

}  // namespace

RankStatic whole_static(const LayerModel& model, const DataParallel& world) {
  return static_of(model, world, parameter_bytes(model, false));
}

RankStatic rank_static(const LayerModel& model, const DataParallel& world) {
  const bool experts_apart = world.expert_ranks_apart() > 0;
  const ParameterBytes bytes = parameter_bytes(model, experts_apart);
  const RankStatic whole = static_of(model, world, bytes);
  if (!experts_apart) return shard(whole, world.ranks, world.zero_stage);
  const RankStatic experts = whole.share(bytes.parameters > 0 ? bytes.expert_parameters / bytes.parameters : 0,
                                         bytes.trainable > 0 ? bytes.expert_trainable / bytes.trainable : 0);
  const RankStatic rest{whole.weights - experts.weights, whole.gradients - experts.gradients,
                        whole.optimizer - experts.optimizer};
  const RankStatic a = shard(rest, world.ranks, world.zero_stage), b = shard(experts, world.expert_ranks, world.zero_stage);
  return {a.weights + b.weights, a.gradients + b.gradients, a.optimizer + b.optimizer};
}

DataParallel data_parallel_of(const ParallelLayout& layout, const std::string& link_name, const LinkFit& link,
                              StateHolding holding) {
  DataParallel world{layout.data * layout.context, layout.zero_stage, link_name, link};
  world.holding = holding;
  world.expert_ranks = world.ranks / layout.expert;
  return world;
}

double static_bytes_per_rank(const LayerModel& model, const DataParallel& world) { return rank_static(model, world).total(); }

double rank_bytes_shift(const LayerModel& model, const DataParallel& world) {
  if (!world.active() && world.holding == StateHolding::measured) return 0;
  const RankStatic whole = whole_static(model, world);
  return rank_static(model, world).total() - model.static_bytes +
         exchange_buffer_bytes(whole, world.ranks, world.zero_stage, world.bucket_bytes, world.holding);
}

double GatheredWeights::weights(int layer) const {
  if (layer < 0 || !world.active() || world.zero_stage != 3) return 0;
  // One layer's at a time, of alike layers one stands for.
  const LayerFit& l = model.layers[static_cast<size_t>(layer)];
  return static_cast<double>(l.parameter_bytes) / l.repeats;
}

int GatheredWeights::next_in_backward(int layer) const {
  for (int j = layer - 1; j >= 0; --j) {
    if (model.layers[static_cast<size_t>(j)].parameter_bytes > 0) return j;
  }
  return -1;
}

double GatheredWeights::forward(int layer) const { return weights(layer); }

double GatheredWeights::backward(int layer) const { return weights(layer) + weights(next_in_backward(layer)); }

double GatheredWeights::before_backward(int layer) const {
  return layer + 1 < static_cast<int>(model.layers.size()) ? backward(layer + 1) : 0;
}

double GatheredWeights::recompute(int layer, int last) const {
  const bool held =
      last + 1 < static_cast<int>(model.layers.size()) && (layer == last + 1 || layer == next_in_backward(last + 1));
  return before_backward(last) + (held ? 0 : weights(layer));
}

}  // namespace papaya::model
