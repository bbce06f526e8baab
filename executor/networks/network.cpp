#include "executor/networks/network.h"

#include <algorithm>
#include <stdexcept>

#include "executor/layers/dense.h"
#include "model/error.h"

namespace papaya::executor {

void Network::index_paths() {
  layers_.clear();
  segments_.clear();
  for (const auto& item : named_modules("", /*include_self=*/false)) {
    if (auto* layer = dynamic_cast<Layer*>(item.value().get())) {
      layer->set_path(item.key());
      layers_.push_back(layer);
    } else if (auto* segment = dynamic_cast<Segment*>(item.value().get())) {
      segment->set_path(item.key());
      segments_.push_back(segment);
    }
  }
  assign_segments();
}

void Network::assign_segments() {
  for (auto* layer : layers_) {
    for (auto* segment : segments_) {
      const std::string prefix = segment->path() + ".";
      if (layer->path().rfind(prefix, 0) == 0 && prefix.size() > layer->segment().size() + 1) {
        layer->set_segment(segment->path());
      }
    }
  }
}

void Network::drop_segments_without_input() {
  std::vector<Segment*> kept;
  for (auto* segment : segments_) {
    const auto first = std::find_if(layers_.begin(), layers_.end(), [&](Layer* l) { return l->segment() == segment->path(); });
    const bool saves_input = first != layers_.end() && std::any_of((*first)->slots().begin(), (*first)->slots().end(),
                                                                   [](const Slot& s) { return s.name == "input"; });
    if (saves_input) {
      kept.push_back(segment);
      continue;
    }
    for (auto* layer : layers_) {
      if (layer->segment() == segment->path()) layer->set_segment("");
    }
  }
  segments_ = std::move(kept);
}

torch::Tensor Network::before_blocks(const Batch&) { throw std::logic_error(config_.name + " is no chain of blocks"); }

torch::Tensor Network::run_block(int, torch::Tensor) { throw std::logic_error(config_.name + " is no chain of blocks"); }

torch::Tensor Network::after_blocks(torch::Tensor, const Batch&) {
  throw std::logic_error(config_.name + " is no chain of blocks");
}

void Network::split_tensors(const std::shared_ptr<TensorGroup>& group) {
  throw InputError(config_.name + ": tensor parallelism over " + std::to_string(group->size()) +
                   " ranks is built for transformers of the zoo");
}

Layer* Network::find_layer(const std::string& path) const {
  for (auto* layer : layers_) {
    if (layer->path() == path) return layer;
  }
  return nullptr;
}

Segment* Network::find_segment(const std::string& path) const {
  for (auto* segment : segments_) {
    if (segment->path() == path) return segment;
  }
  return nullptr;
}

void Network::set_precision(const Precision& precision) {
  precision_ = precision;
  compute_dtype_ = precision.autocast ? torch::kFloat : precision.dtype;
  for (auto* layer : layers_) {
    const LayerPrecision p = precision.autocast && layer->fp32_under_autocast ? LayerPrecision{torch::kFloat, true}
                                                                              : layer_precision(layer->kind(), precision);
    layer->set_compute_dtype(p.dtype, p.casts_inputs);
    auto* linear = dynamic_cast<Linear*>(layer);
    if (linear == nullptr || precision.fp8 == model::Fp8Recipe::none) continue;
    if (linear->set_fp8(precision.fp8) && linear->gathers_tokens) {
      throw InputError("layer " + layer->path() + ": FP8 training does not run with the sequence split (sequence parallelism)");
    }
  }
}

int64_t Network::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  for (const Layer* layer : layers_) n += layer->stored_weight() ? layer->stored_weight()->numel() : 0;
  return n;
}

int64_t Network::fp8_state_bytes() const {
  int64_t n = 0;
  for (const Layer* layer : layers_) {
    const auto* linear = dynamic_cast<const Linear*>(layer);
    if (linear == nullptr || !linear->fp8().delayed) continue;
    const Fp8DelayedState& s = *linear->fp8().delayed;
    for (const auto& t : {s.weight_codes, s.weight_codes_t, s.amax_history, s.scales, s.steps, s.step_done}) {
      n += t.numel() * t.element_size();
    }
  }
  return n;
}

int64_t Network::stored_weight_bytes() const {
  int64_t n = 0;
  for (const Layer* layer : layers_) n += layer->stored_weight() ? layer->stored_weight()->bytes() : 0;
  return n;
}

std::vector<torch::Tensor> Network::trainable_parameters() const {
  std::vector<torch::Tensor> out;
  for (const auto& p : parameters()) {
    if (p.requires_grad()) out.push_back(p);
  }
  return out;
}

int64_t Network::trainable_parameter_count() const {
  int64_t n = 0;
  for (const auto& p : trainable_parameters()) n += p.numel();
  return n;
}

}  // namespace papaya::executor
