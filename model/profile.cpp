#include "model/profile.h"

#include <set>

#include "model/error.h"
#include "model/json_file.h"
#include "model/saved_tensor_json.h"

namespace papaya::model {
using nlohmann::json;

namespace {

json measurement_to_json(const LayerMeasurement& m) {
  return {{"forward_s", m.forward_s},
          {"backward_s", m.backward_s},
          {"forward_start_bytes", m.forward_start_bytes},
          {"forward_end_bytes", m.forward_end_bytes},
          {"forward_peak_bytes", m.forward_peak_bytes},
          {"backward_start_bytes", m.backward_start_bytes},
          {"backward_end_bytes", m.backward_end_bytes},
          {"backward_peak_bytes", m.backward_peak_bytes}};
}

LayerMeasurement measurement_from_json(const json& doc) {
  LayerMeasurement m;
  m.forward_s = doc.value("forward_s", 0.0);
  m.backward_s = doc.value("backward_s", 0.0);
  m.forward_start_bytes = doc.value("forward_start_bytes", int64_t{0});
  m.forward_end_bytes = doc.value("forward_end_bytes", int64_t{0});
  m.forward_peak_bytes = doc.value("forward_peak_bytes", int64_t{0});
  m.backward_start_bytes = doc.value("backward_start_bytes", int64_t{0});
  m.backward_end_bytes = doc.value("backward_end_bytes", int64_t{0});
  m.backward_peak_bytes = doc.value("backward_peak_bytes", int64_t{0});
  return m;
}

json iteration_to_json(const IterationMeasurement& it) {
  return {{"batch", it.batch},
          {"oom", it.oom},
          {"steps", it.steps},
          {"iteration_s", it.iteration_s},
          {"forward_s", it.forward_s},
          {"backward_s", it.backward_s},
          {"optimizer_s", it.optimizer_s},
          {"static_bytes", it.static_bytes},
          {"peak_bytes", it.peak_bytes},
          {"peak_reserved_bytes", it.peak_reserved_bytes},
          {"forward_end_bytes", it.forward_end_bytes}};
}

IterationMeasurement iteration_from_json(const json& doc) {
  IterationMeasurement it;
  it.batch = doc.at("batch");
  it.oom = doc.at("oom");
  it.steps = doc.value("steps", 0);
  it.iteration_s = doc.value("iteration_s", 0.0);
  it.forward_s = doc.value("forward_s", 0.0);
  it.backward_s = doc.value("backward_s", 0.0);
  it.optimizer_s = doc.value("optimizer_s", 0.0);
  it.static_bytes = doc.value("static_bytes", int64_t{0});
  it.peak_bytes = doc.value("peak_bytes", int64_t{0});
  it.peak_reserved_bytes = doc.value("peak_reserved_bytes", int64_t{0});
  it.forward_end_bytes = doc.value("forward_end_bytes", int64_t{0});
  return it;
}

// What the schema cannot say: sizes that must agree, names that must exist.
void check_consistency(const Profile& p, const std::string& label) {
  const auto fail = [&](const std::string& pointer, const std::string& why) {
    throw InputError(label + ": " + pointer + ": " + why);
  };
  const size_t n = p.batches.size();
  if (p.iterations.size() != n) fail("/iterations", "one entry per batch size expected");
  for (size_t i = 0; i < n; ++i) {
    if (p.iterations[i].batch != p.batches[i]) fail("/iterations/" + std::to_string(i) + "/batch", "does not match /batches");
  }
  std::set<std::string> slots, paths, segments;
  for (const auto& s : p.segments) segments.insert(s.path);
  for (const auto& layer : p.layers) {
    for (const auto& s : layer.saved) slots.insert(layer.path + ":" + s.slot);
  }
  for (size_t l = 0; l < p.layers.size(); ++l) {
    const auto& layer = p.layers[l];
    const std::string where = "/layers/" + std::to_string(l);
    if (!paths.insert(layer.path).second) fail(where + "/path", "'" + layer.path + "' appears twice");
    if (layer.measured.size() != n) fail(where + "/measured", "one entry per batch size expected");
    if (!layer.segment.empty() && !segments.count(layer.segment)) fail(where + "/segment", "unknown segment '" + layer.segment + "'");
    for (size_t s = 0; s < layer.saved.size(); ++s) {
      const auto& storage = layer.saved[s].storage;
      if (!storage.empty() && !slots.count(storage)) {
        fail(where + "/saved/" + std::to_string(s) + "/storage", "no slot '" + storage + "'");
      }
    }
    for (const auto& key : layer.output_saved_by) {
      if (!slots.count(key)) fail(where + "/output_saved_by", "no slot '" + key + "'");
    }
  }
  for (size_t s = 0; s < p.segments.size(); ++s) {
    const auto& seg = p.segments[s];
    const std::string where = "/segments/" + std::to_string(s);
    if (seg.recompute_s.size() != n) fail(where + "/recompute_s", "one entry per batch size expected");
    if (!seg.input.storage.empty() && !slots.count(seg.input.storage)) {
      fail(where + "/input/storage", "no slot '" + seg.input.storage + "'");
    }
  }
}

}  // namespace

NetworkLayout Profile::layout() const {
  NetworkLayout layout;
  for (const auto& s : segments) layout.segments.push_back(s.path);
  for (const auto& l : layers) {
    LayerDesc desc{l.path, l.kind, {}, l.segment, l.output_saved_by};
    for (const auto& s : l.saved) desc.slots.push_back({s.slot, s.kind, s.storage});
    layout.layers.push_back(std::move(desc));
  }
  return layout;
}

json profile_to_json(const Profile& p) {
  json layers = json::array(), segments = json::array(), codecs = json::array(), iterations = json::array();
  for (const auto& l : p.layers) {
    json saved = json::array(), measured = json::array();
    for (const auto& s : l.saved) saved.push_back(saved_tensor_to_json(s));
    for (const auto& m : l.measured) measured.push_back(measurement_to_json(m));
    layers.push_back({{"path", l.path},
                      {"kind", l.kind},
                      {"segment", l.segment},
                      {"saved", saved},
                      {"output_saved_by", l.output_saved_by},
                      {"output_bytes_per_sample", l.output_bytes_per_sample},
                      {"parameter_bytes", l.parameter_bytes},
                      {"forward_flops_per_sample", l.forward_flops_per_sample},
                      {"forward_bytes_moved_per_sample", l.forward_bytes_moved_per_sample},
                      {"measured", measured}});
  }
  for (const auto& s : p.segments) {
    segments.push_back({{"path", s.path}, {"recompute_s", s.recompute_s}, {"input", saved_tensor_to_json(s.input)}});
  }
  for (const auto& c : p.codecs) {
    codecs.push_back({{"bits", c.bits}, {"pack_bytes_per_s", c.pack_bytes_per_s}, {"unpack_bytes_per_s", c.unpack_bytes_per_s}});
  }
  for (const auto& it : p.iterations) iterations.push_back(iteration_to_json(it));
  json doc = {{"papaya_profile", p.version},
              {"network", p.network},
              {"precision", p.precision},
              {"machine",
               {{"device", p.machine.device},
                {"device_name", p.machine.device_name},
                {"memory_bytes", p.machine.memory_bytes},
                {"threads", p.machine.threads},
                {"torch_version", p.machine.torch_version},
                {"cuda_version", p.machine.cuda_version},
                {"papaya_version", p.machine.papaya_version}}},
              {"batches", p.batches},
              {"iterations", iterations},
              {"layers", layers},
              {"segments", segments},
              {"codecs", codecs},
              {"h2d_bytes_per_s", p.h2d_bytes_per_s},
              {"d2h_bytes_per_s", p.d2h_bytes_per_s}};
  if (!p.network_config.is_null()) doc["network_config"] = p.network_config;
  return doc;
}

Profile profile_from_json(const json& doc, const std::string& label) {
  if (doc.is_object() && doc.contains("papaya_profile") && doc["papaya_profile"] != profile_version) {
    throw InputError(label + ": /papaya_profile: version " + doc["papaya_profile"].dump() + " (this papaya reads version " +
                     std::to_string(profile_version) + ")");
  }
  validate_json(doc, "profile", label);
  Profile p;
  p.network = doc.at("network");
  p.network_config = doc.value("network_config", json());
  p.precision = doc.at("precision");
  const json& m = doc.at("machine");
  p.machine.device = m.at("device");
  p.machine.device_name = m.at("device_name");
  p.machine.memory_bytes = m.at("memory_bytes");
  p.machine.threads = m.at("threads");
  p.machine.torch_version = m.value("torch_version", "");
  p.machine.cuda_version = m.value("cuda_version", "");
  p.machine.papaya_version = m.value("papaya_version", "");
  p.batches = doc.at("batches").get<std::vector<int>>();
  for (const auto& it : doc.at("iterations")) p.iterations.push_back(iteration_from_json(it));
  for (const auto& l : doc.at("layers")) {
    LayerProfile layer;
    layer.path = l.at("path");
    layer.kind = l.at("kind");
    layer.segment = l.at("segment");
    for (const auto& s : l.at("saved")) layer.saved.push_back(saved_tensor_from_json(s));
    layer.output_saved_by = l.at("output_saved_by").get<std::vector<std::string>>();
    layer.output_bytes_per_sample = l.at("output_bytes_per_sample");
    layer.parameter_bytes = l.at("parameter_bytes");
    layer.forward_flops_per_sample = l.at("forward_flops_per_sample");
    layer.forward_bytes_moved_per_sample = l.at("forward_bytes_moved_per_sample");
    for (const auto& meas : l.at("measured")) layer.measured.push_back(measurement_from_json(meas));
    p.layers.push_back(std::move(layer));
  }
  for (const auto& s : doc.at("segments")) {
    p.segments.push_back({s.at("path"), s.at("recompute_s").get<std::vector<double>>(), saved_tensor_from_json(s.at("input"))});
  }
  for (const auto& c : doc.at("codecs")) {
    p.codecs.push_back({c.at("bits"), c.at("pack_bytes_per_s"), c.at("unpack_bytes_per_s")});
  }
  p.h2d_bytes_per_s = doc.at("h2d_bytes_per_s");
  p.d2h_bytes_per_s = doc.at("d2h_bytes_per_s");
  check_consistency(p, label);
  return p;
}

Profile read_profile(const std::string& path) { return profile_from_json(read_json_file(path, "profile"), path); }

void write_profile(const std::string& path, const Profile& profile) { write_json_file(path, profile_to_json(profile)); }

}  // namespace papaya::model
