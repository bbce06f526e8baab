#include "model/layout.h"

namespace papaya::model {

const SlotDesc* LayerDesc::find_slot(const std::string& name) const {
  for (const auto& s : slots) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const LayerDesc* NetworkLayout::find_layer(const std::string& path) const {
  for (const auto& l : layers) {
    if (l.path == path) return &l;
  }
  return nullptr;
}

std::string tensor_key(const std::string& path, const std::string& slot) { return path + ":" + slot; }

}  // namespace papaya::model
