#include "executor/networks/network.h"

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
    const LayerPrecision p = layer_precision(layer->kind(), precision);
    layer->set_compute_dtype(p.dtype, p.casts_inputs);
  }
}

int64_t Network::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

}  // namespace papaya::executor
