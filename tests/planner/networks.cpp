#include "tests/planner/networks.h"

#include <random>

#include "model/fit/fit_profile.h"

namespace papaya::testing {

ProfileSpec chain(const std::vector<ChainLayer>& layers, double static_bytes) {
  ProfileSpec spec;
  spec.static_bytes = static_bytes;
  spec.optimizer_s = {0, 0, 1e-3};
  spec.rest_s = {0, 1e-6, 5e-5};
  spec.codecs = {{1, 4e9, 8e9}, {2, 1e9, 2e9}, {4, 1.5e9, 3e9}, {8, 2e9, 4e9}};
  double stored = 0;
  std::vector<double> stored_after_forward;
  for (const auto& l : layers) {
    for (const auto& t : l.saved) stored += t.storage == l.path + ":" + t.slot ? t.numel_per_sample * t.element_size : 0;
    stored_after_forward.push_back(stored);
  }
  double input =
      layers.empty() || layers[0].saved.empty() ? 0 : layers[0].saved[0].numel_per_sample * layers[0].saved[0].element_size;
  for (size_t j = 0; j < layers.size(); ++j) {
    const ChainLayer& l = layers[j];
    const double out = l.output_bytes_per_sample;
    LayerSpec s;
    s.path = l.path;
    s.kind = l.kind;
    s.segment = l.segment;
    s.saved = l.saved;
    s.output_saved_by = l.output_saved_by;
    s.output_bytes_per_sample = out;
    const double before = j == 0 ? 0 : stored_after_forward[j - 1];
    s.forward_start = {before + input, static_bytes};
    s.forward_peak = {stored_after_forward[j] + input + 1.5 * out, static_bytes};
    s.backward_start = {stored_after_forward[j] + out, static_bytes};
    s.backward_peak = {stored_after_forward[j] + 3.5 * out, static_bytes};
    s.forward_s = {0, 2e-6 + out * 1e-9, 1e-5};
    s.backward_s = {0, 4e-6 + out * 2e-9, 2e-5};
    s.forward_flops_per_sample = 8 * out;
    s.forward_bytes_moved_per_sample = 2 * out + input;
    s.parameter_bytes = l.kind == "linear" ? 4096 : 0;
    spec.layers.push_back(s);
    input = out;
  }
  for (size_t j = 0; j < layers.size(); ++j) {
    const ChainLayer& l = layers[j];
    if (l.segment.empty() || (!spec.segments.empty() && spec.segments.back().path == l.segment)) continue;
    model::SavedTensorProfile in = l.saved.at(0);
    in.slot = "input";
    double recompute = 0;
    for (size_t k = j; k < layers.size() && layers[k].segment == l.segment; ++k) recompute += spec.layers[k].forward_s.per_sample;
    spec.segments.push_back({l.segment, in, {0, recompute, 1e-5}});
  }
  return spec;
}

namespace {

using model::SlotKind;

ChainLayer linear(const std::string& path, const std::string& segment, double in, double out) {
  return {path, "linear", segment, {saved("input", SlotKind::activation, in, 4, path + ":input")}, 4 * out, {}};
}

ChainLayer gelu(const std::string& path, const std::string& segment, double width, const std::string& consumer) {
  return {path, "gelu", segment, {saved("input", SlotKind::activation, width, 4, path + ":input")}, 4 * width, {consumer}};
}

}  // namespace

ProfileSpec tiny_block() {
  return chain({linear("block.fc1", "block", 64, 256),
                gelu("block.act", "block", 256, "block.fc2:input"),
                linear("block.fc2", "block", 256, 64),
                {"drop", "dropout", "", {saved("mask", SlotKind::mask, 64, 1, "drop:mask")}, 4 * 64, {}},
                linear("head", "", 64, 16)},
               64 << 10);
}

ProfileSpec random_chain(int layers, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> width(16, 160);
  std::vector<ChainLayer> chain_layers;
  double in = 4 * width(random);
  for (int j = 0; j < layers; ++j) {
    const std::string segment = "groups." + std::to_string(j / 3);
    const std::string path = segment + ".l" + std::to_string(j % 3);
    const double out = 4 * width(random);
    if (j % 3 == 1 && j + 1 < layers) {
      chain_layers.push_back(gelu(path, segment, in, segment + ".l2:input"));
      continue;  // a GELU keeps its width
    }
    chain_layers.push_back(linear(path, segment, in, out));
    in = out;
  }
  return chain(chain_layers, 256 << 10);
}

model::LayerModel fitted(ProfileSpec spec, bool gpu) {
  if (gpu) {
    spec.device = "cuda:0";
    spec.device_name = "test gpu";
    spec.link_bytes_per_s = 2e10;
  }
  return model::fit_profile(make_profile(spec), "synthetic").model;
}

}  // namespace papaya::testing
