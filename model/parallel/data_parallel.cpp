#include "model/parallel/data_parallel.h"

namespace papaya::model {

void DataParallel::check() const { shard({}, ranks, zero_stage); }  // shard's checks

namespace {

bool in_half_precision(const LayerModel& model) { return model.precision != "fp32"; }

bool computes_with_held(bool half_precision, const DataParallel& world) {
  // In fp32 Megatron-LM holds what the profile measured: fp32 weights, their
  // gradients (its main gradients) and AdamW's two moments, no copies.
  return world.holding == StateHolding::megatron && half_precision;
}

RankStatic static_of(const StateBytes& state, const DataParallel& world) {
  if (computes_with_held(state.half_precision, world)) return megatron_static(state.parameters, state.trainable);
  return whole_static(state.parameters, state.trainable, state.static_bytes);
}

}  // namespace

bool computes_with_held_weights(const LayerModel& model, const DataParallel& world) {
  return computes_with_held(in_half_precision(model), world);
}

namespace {

// state_bytes, its experts' part counted only where `experts` asks (a path
// looked at per layer, on paths a search runs thousands of times).
StateBytes counted(const LayerModel& model, const std::vector<bool>* held, double static_bytes, bool experts) {
  StateBytes out;
  out.static_bytes = static_bytes;
  out.half_precision = in_half_precision(model);
  for (size_t j = 0; j < model.layers.size(); ++j) {
    if (held && !(*held)[j]) continue;
    const LayerFit& layer = model.layers[j];
    const auto parameters = static_cast<double>(layer.parameter_bytes), trainable = static_cast<double>(layer.trainable_bytes());
    out.parameters += parameters, out.trainable += trainable;
    if (experts && in_expert(layer.path)) out.expert_parameters += parameters, out.expert_trainable += trainable;
  }
  return out;
}

}  // namespace

StateBytes state_bytes(const LayerModel& model) { return counted(model, nullptr, model.static_bytes, true); }

StateBytes state_bytes(const LayerModel& model, const std::vector<bool>& held, double static_bytes) {
  return counted(model, &held, static_bytes, true);
}

RankStatic whole_static(const LayerModel& model, const DataParallel& world) {
  return whole_static(counted(model, nullptr, model.static_bytes, false), world);
}

RankStatic whole_static(const StateBytes& state, const DataParallel& world) { return static_of(state, world); }

RankStatic rank_static(const LayerModel& model, const DataParallel& world) {
  return rank_static(counted(model, nullptr, model.static_bytes, world.expert_ranks_apart() > 0), world);
}

RankStatic rank_static(const StateBytes& state, const DataParallel& world) {
  const RankStatic whole = static_of(state, world);
  if (world.expert_ranks_apart() == 0) return shard(whole, world.ranks, world.zero_stage);
  const RankStatic experts = whole.share(state.parameters > 0 ? state.expert_parameters / state.parameters : 0,
                                         state.trainable > 0 ? state.expert_trainable / state.trainable : 0);
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
