#include "model/network_layout.h"

#include <charconv>
#include <string_view>

namespace papaya::model {

const LayoutSlot* LayoutLayer::find_slot(const std::string& name) const {
  for (const auto& s : slots) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const LayoutLayer* NetworkLayout::find_layer(const std::string& path) const {
  for (const auto& l : layers) {
    if (l.path == path) return &l;
  }
  return nullptr;
}

int block_of_path(const std::string& path) {
  // Read in place: a layout search asks for each of a rank's thousands of layers.
  constexpr std::string_view prefix = "blocks.";
  if (path.compare(0, prefix.size(), prefix) != 0) return -1;
  int block = -1;
  const auto [end, error] = std::from_chars(path.data() + prefix.size(), path.data() + path.size(), block);
  return error == std::errc() ? block : -1;
}

namespace {

// Where the prefix expert_of_path gives ends (the dot after the expert's
// index), npos where the path lies in no expert.
size_t expert_prefix_end(const std::string& path) {
  static const std::string marker = ".moe.experts.";
  const size_t at = path.find(marker);
  return at == std::string::npos ? std::string::npos : path.find('.', at + marker.size());
}

}  // namespace

std::string expert_of_path(const std::string& path) {
  const size_t dot = expert_prefix_end(path);
  return dot == std::string::npos ? "" : path.substr(0, dot + 1);
}

bool in_expert(const std::string& path) { return expert_prefix_end(path) != std::string::npos; }

std::string tensor_key(const std::string& path, const std::string& slot) { return path + ":" + slot; }

}  // namespace papaya::model
