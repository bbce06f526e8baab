#include "model/parallel/pipeline_stages.h"

#include <algorithm>
#include <map>
#include <set>

#include "model/error.h"
#include "model/parallel/sharding.h"

namespace papaya::model {

std::vector<StageSpan> pipeline_stages(int blocks, int stages) {
  if (stages < 1 || stages > blocks) {
    throw InputError(std::to_string(blocks) + " blocks do not make " + std::to_string(stages) + " pipeline stages");
  }
  std::vector<int> size(static_cast<size_t>(stages), blocks / stages);
  for (int extra = blocks % stages, s = std::max(0, stages - 2); extra > 0; --extra, s = s > 0 ? s - 1 : stages - 1) {
    ++size[static_cast<size_t>(s)];
  }
  std::vector<StageSpan> out;
  int first = 0;
  for (int s = 0; s < stages; ++s) {
    out.push_back({first, first + size[static_cast<size_t>(s)], s == 0, s == stages - 1});
    first += size[static_cast<size_t>(s)];
  }
  return out;
}

namespace {

LinearCurve less(const LinearCurve& c, double per_sample, double fixed) {
  if (c.per_sample == 0 && c.fixed == 0) return c;  // not measured
  return {c.per_sample - per_sample, c.fixed - fixed};
}

// References to layers on other stages, made the stage's own: a storage
// first saved elsewhere is first saved by its first slot here, a tensor the
// network's code holds past the stage is held to its end, and outputs saved
// elsewhere are not saved here.
void keep_references_within(LayerModel& stage) {
  std::set<std::string> paths;
  for (const LayerFit& l : stage.layers) paths.insert(l.path);
  const auto here = [&](const std::string& key) { return paths.count(key.substr(0, key.rfind(':'))) > 0; };
  std::map<std::string, std::string> owner;  // a storage first saved elsewhere -> its first slot here
  for (LayerFit& l : stage.layers) {
    for (SavedTensorProfile& t : l.saved) {
      if (!t.storage.empty() && !here(t.storage)) t.storage = owner.emplace(t.storage, tensor_key(l.path, t.slot)).first->second;
      if (!t.last_forward_use.empty() && !paths.count(t.last_forward_use)) t.last_forward_use = stage.layers.back().path;
    }
    std::vector<std::string> saved_by;
    for (const std::string& key : l.output_saved_by) {
      if (here(key)) saved_by.push_back(key);
    }
    l.output_saved_by = saved_by;
  }
  for (SegmentFit& s : stage.segments) {
    if (!s.input.storage.empty() && !here(s.input.storage)) {
      const auto found = owner.find(s.input.storage);
      s.input.storage = found == owner.end() ? "" : found->second;
    }
  }
}

}  // namespace

// Those of its blocks; before the first block, the first stage's; after the last, the last's.
std::vector<bool> stage_layers(const LayerModel& rank, const StageSpan& span) {
  std::vector<bool> held(rank.layers.size(), false);
  bool seen_block = false;
  for (size_t j = 0; j < rank.layers.size(); ++j) {
    const int block = block_of_path(rank.layers[j].path);
    if (block >= 0) seen_block = true;
    held[j] = block >= 0 ? block >= span.first_block && block < span.end_block : seen_block ? span.last : span.first;
  }
  if (std::find(held.begin(), held.end(), true) == held.end())
    throw InputError("pipeline stage of blocks " + std::to_string(span.first_block) + "-" + std::to_string(span.end_block - 1) +
                     " holds no layers");
  return held;
}

namespace {

// Which of a rank's layers a stage holds (stage_layers) and its share of
// the rank's static bytes.
struct StageChoice {
  std::vector<bool> held;
  size_t first = 0;  // the first held
  double static_bytes = 0;
};

StageChoice choose(const LayerModel& rank, const StageSpan& span) {
  StageChoice c;
  c.held = stage_layers(rank, span);
  c.first = static_cast<size_t>(std::find(c.held.begin(), c.held.end(), true) - c.held.begin());
  double parameters = 0, trainable = 0, all_parameters = 0, all_trainable = 0;
  for (size_t j = 0; j < rank.layers.size(); ++j) {
    const LayerFit& l = rank.layers[j];
    all_parameters += static_cast<double>(l.parameter_bytes);
    all_trainable += static_cast<double>(l.trainable_bytes());
    if (!c.held[j]) continue;
    parameters += static_cast<double>(l.parameter_bytes);
    trainable += static_cast<double>(l.trainable_bytes());
  }
  // Weights another layer owns (a tied LM head's, a multi-token prediction
  // module's embedding): a copy on the last stage when their owner is
  // elsewhere, one for each owner (one that is not recorded: elsewhere).
  if (span.last && !span.first) {
    std::set<std::string> here, copied;
    for (size_t j = 0; j < rank.layers.size(); ++j) {
      if (c.held[j]) here.insert(rank.layers[j].path);
    }
    for (size_t j = 0; j < rank.layers.size(); ++j) {
      const LayerFit& l = rank.layers[j];
      if (!c.held[j] || l.shared_trainable_bytes == 0 || here.count(l.shares_weights_of) > 0) continue;
      if (!l.shares_weights_of.empty() && !copied.insert(l.shares_weights_of).second) continue;
      parameters += static_cast<double>(l.shared_trainable_bytes);
      trainable += static_cast<double>(l.shared_trainable_bytes);
    }
  }
  c.static_bytes =
      whole_static(all_parameters, all_trainable, rank.static_bytes)
          .share(all_parameters > 0 ? parameters / all_parameters : 1, all_trainable > 0 ? trainable / all_trainable : 1)
          .total();
  return c;
}

}  // namespace

SaturatingCurve stage_rest_seconds(const LayerModel& rank, const std::vector<bool>& held) {
  double layers = 0, held_layers = 0;  // alike layers one stands for, each
  for (size_t j = 0; j < rank.layers.size(); ++j) {
    layers += rank.layers[j].repeats;
    if (held[j]) held_layers += rank.layers[j].repeats;
  }
  return rank.rest_seconds.times(held_layers / layers);
}

StateBytes stage_state(const LayerModel& rank, const StageSpan& span) {
  const StageChoice c = choose(rank, span);
  return state_bytes(rank, c.held, c.static_bytes);
}

LayerModel stage_model(const LayerModel& rank, const StageSpan& span) {
  const StageChoice c = choose(rank, span);
  // What the layers before the stage hold at its start, less the stage's input.
  double before_per_sample = 0, before_fixed = 0;
  if (c.first > 0) {
    const LayerFit& at = rank.layers[c.first];
    before_per_sample = at.forward_start.per_sample - rank.layers[c.first - 1].output_bytes_per_sample;
    before_fixed = at.forward_start.fixed - rank.static_bytes;
  }

  LayerModel stage = rank.without_layers();
  stage.layers.reserve(static_cast<size_t>(std::count(c.held.begin(), c.held.end(), true)));
  for (size_t j = 0; j < rank.layers.size(); ++j) {
    if (c.held[j]) stage.layers.push_back(rank.layers[j]);
  }
  stage.static_bytes = c.static_bytes;
  const double static_shift = stage.static_bytes - rank.static_bytes;
  for (LayerFit& l : stage.layers) {
    for (LinearCurve* c :
         {&l.forward_start, &l.forward_peak, &l.forward_gap_peak, &l.backward_start, &l.backward_peak, &l.backward_gap_peak}) {
      *c = less(*c, before_per_sample, before_fixed - static_shift);
    }
  }
  for (const SegmentFit& s : rank.segments) {
    for (const LayerFit& l : stage.layers) {
      if (l.segment == s.path) {
        stage.segments.push_back(s);
        break;
      }
    }
  }
  keep_references_within(stage);
  const double static_share = rank.static_bytes > 0 ? stage.static_bytes / rank.static_bytes : 1;
  stage.optimizer_peak.fixed = stage.static_bytes + (rank.optimizer_peak.fixed - rank.static_bytes) * static_share;
  stage.optimizer_seconds = rank.optimizer_seconds.times(static_share);
  stage.rest_seconds = stage_rest_seconds(rank, c.held);
  return stage;
}

double in_flight_micro_batches(int stage, const ParallelLayout& l) {
  const double p = l.pipeline, v = l.virtual_stages, m = l.micro_batches;
  const double in_flight = v == 1 ? p - stage : (2 * (p - stage - 1) + (v - 1) * p + 1) / v;
  return std::min(in_flight, m);
}

}  // namespace papaya::model
