#include "model/profile.h"

#include <algorithm>
#include <set>
#include <type_traits>

#include "model/error.h"
#include "model/json_file.h"
#include "model/plan.h"

namespace papaya::model {
namespace {

using nlohmann::json;

constexpr const char* version_key = "papaya_profile";

json to_json(const LayerMeasurement& m) {
  return {{"forward_s", m.forward_s},
          {"backward_s", m.backward_s},
          {"forward_start_bytes", m.forward_start_bytes},
          {"forward_end_bytes", m.forward_end_bytes},
          {"forward_peak_bytes", m.forward_peak_bytes},
          {"backward_start_bytes", m.backward_start_bytes},
          {"backward_end_bytes", m.backward_end_bytes},
          {"backward_peak_bytes", m.backward_peak_bytes},
          {"forward_gap_peak_bytes", m.forward_gap_peak_bytes},
          {"backward_gap_peak_bytes", m.backward_gap_peak_bytes}};
}

template <typename Rung>
json to_json(const std::vector<Rung>& rungs) {
  json out = json::array();
  for (const Rung& r : rungs) {
    out.push_back({{"batch", r.batch},
                   {"forward_headroom_bytes", r.forward_headroom_bytes},
                   {"backward_headroom_bytes", r.backward_headroom_bytes}});
    if constexpr (std::is_same_v<Rung, StoredHeadroom>) {
      if (r.backward_gap_headroom_bytes) out.back()["backward_gap_headroom_bytes"] = *r.backward_gap_headroom_bytes;
    } else if (r.timed()) {
      out.back()["forward_s"] = r.forward_s;
      out.back()["backward_s"] = r.backward_s;
    }
  }
  return out;
}

std::vector<ProbeRung> rungs_from_json(const json& rungs) {
  std::vector<ProbeRung> out;
  for (const json& r : rungs) {
    out.push_back({r.at("batch"), r.at("forward_headroom_bytes"), r.at("backward_headroom_bytes"), r.value("forward_s", 0.0),
                   r.value("backward_s", 0.0)});
  }
  return out;
}

std::vector<StoredHeadroom> stored_from_json(const json& stored) {
  std::vector<StoredHeadroom> out;
  for (const json& r : stored) {
    out.push_back({r.at("batch"), r.at("forward_headroom_bytes"), r.at("backward_headroom_bytes"), std::nullopt});
    if (r.contains("backward_gap_headroom_bytes")) out.back().backward_gap_headroom_bytes = r.at("backward_gap_headroom_bytes");
  }
  return out;
}

json to_json(const LayerProfile& l) {
  json measured = json::array();
  for (const auto& m : l.measured) measured.push_back(to_json(m));
  json j = {{"measured", measured}};
  add_layer_description_json(l, j);
  if (l.probe) {
    j["probe"] = {{"forward_s", l.probe->forward_s},
                  {"backward_s", l.probe->backward_s},
                  {"forward_headroom_bytes", l.probe->forward_headroom_bytes},
                  {"backward_headroom_bytes", l.probe->backward_headroom_bytes}};
    if (!l.probe->rungs.empty()) j["probe"]["rungs"] = to_json(l.probe->rungs);
  }
  if (!l.stored.empty()) j["stored"] = to_json(l.stored);
  return j;
}

json to_json(const IterationMeasurement& i) {
  return {{"batch", i.batch},
          {"oom", i.oom},
          {"steps", i.steps},
          {"iteration_s", i.iteration_s},
          {"forward_s", i.forward_s},
          {"backward_s", i.backward_s},
          {"optimizer_s", i.optimizer_s},
          {"static_bytes", i.static_bytes},
          {"peak_bytes", i.peak_bytes},
          {"passes_peak_bytes", i.passes_peak_bytes},
          {"optimizer_peak_bytes", i.optimizer_peak_bytes},
          {"peak_reserved_bytes", i.peak_reserved_bytes},
          {"forward_end_bytes", i.forward_end_bytes}};
}

json to_json(const MachineInfo& m) {
  return {{"device", m.device},
          {"device_name", m.device_name},
          {"memory_bytes", m.memory_bytes},
          {"threads", m.threads},
          {"torch_version", m.torch_version},
          {"cuda_version", m.cuda_version},
          {"papaya_version", m.papaya_version},
          {"timing", m.timing}};
}

LayerMeasurement measurement_from_json(const json& j) {
  LayerMeasurement m;
  m.forward_s = j.at("forward_s");
  m.backward_s = j.at("backward_s");
  m.forward_start_bytes = j.at("forward_start_bytes");
  m.forward_end_bytes = j.at("forward_end_bytes");
  m.forward_peak_bytes = j.at("forward_peak_bytes");
  m.backward_start_bytes = j.at("backward_start_bytes");
  m.backward_end_bytes = j.at("backward_end_bytes");
  m.backward_peak_bytes = j.at("backward_peak_bytes");
  m.forward_gap_peak_bytes = j.at("forward_gap_peak_bytes");
  m.backward_gap_peak_bytes = j.at("backward_gap_peak_bytes");
  return m;
}

LayerProfile layer_from_json(const json& j, const std::string& where) {
  LayerProfile l;
  static_cast<LayerDescription&>(l) = layer_description_from_json(j, where);
  for (const auto& m : j.at("measured")) l.measured.push_back(measurement_from_json(m));
  if (j.contains("probe")) {
    const json& probe = j.at("probe");
    l.probe = LayerProbe{probe.at("forward_s"),
                         probe.at("backward_s"),
                         probe.at("forward_headroom_bytes"),
                         probe.at("backward_headroom_bytes"),
                         {}};
    l.probe->rungs = rungs_from_json(probe.value("rungs", json::array()));
  }
  l.stored = stored_from_json(j.value("stored", json::array()));
  return l;
}

IterationMeasurement iteration_from_json(const json& j) {
  IterationMeasurement i;
  i.batch = j.at("batch");
  i.oom = j.at("oom");
  i.steps = j.at("steps");
  i.iteration_s = j.at("iteration_s");
  i.forward_s = j.at("forward_s");
  i.backward_s = j.at("backward_s");
  i.optimizer_s = j.at("optimizer_s");
  i.static_bytes = j.at("static_bytes");
  i.peak_bytes = j.at("peak_bytes");
  i.passes_peak_bytes = j.at("passes_peak_bytes");
  i.optimizer_peak_bytes = j.at("optimizer_peak_bytes");
  i.peak_reserved_bytes = j.at("peak_reserved_bytes");
  i.forward_end_bytes = j.at("forward_end_bytes");
  return i;
}

MachineInfo machine_from_json(const json& j) {
  MachineInfo m;
  m.device = j.at("device");
  m.device_name = j.at("device_name");
  m.memory_bytes = j.at("memory_bytes");
  m.threads = j.at("threads");
  m.torch_version = j.at("torch_version");
  m.cuda_version = j.at("cuda_version");
  m.papaya_version = j.at("papaya_version");
  m.timing = j.at("timing");
  return m;
}

// The file names what it is and which version before the schema is applied,
// so that a foreign document or an older or newer profile gets a message that
// says so.
void check_version(const json& doc, const std::string& label) {
  const auto it = doc.is_object() ? doc.find(version_key) : doc.end();
  if (!doc.is_object() || it == doc.end()) {
    throw InputError(label + ": not a papaya profile (no \"" + version_key + "\" key; write one with papaya profile)");
  }
  if (it->is_number_integer() && it->get<int64_t>() < profile_version) {
    throw InputError(label + ": profile version " + std::to_string(it->get<int64_t>()) +
                     " was written by an older papaya, without figures this one fits; profile again");
  }
  if (it->is_number_integer() && it->get<int64_t>() > profile_version) {
    throw InputError(label + ": profile version " + std::to_string(it->get<int64_t>()) + " is newer than this papaya reads (" +
                     std::to_string(profile_version) + "); update papaya");
  }
}

void require(bool ok, const std::string& label, const std::string& pointer, const std::string& message) {
  if (!ok) throw InputError(label + ": " + pointer + ": " + message);
}

// What the schema cannot say: one entry per batch everywhere, and the
// references between layers and segments that a model has too.
void check_consistency(const Profile& p, const std::string& label) {
  const size_t n = p.batches.size();
  const auto per_batch = [&](size_t size, const std::string& pointer) {
    require(size == n, label, pointer, std::to_string(size) + " entries, but " + std::to_string(n) + " batch sizes in /batches");
  };
  require(std::set<int>(p.batches.begin(), p.batches.end()).size() == n, label, "/batches", "a batch size is repeated");
  per_batch(p.iterations.size(), "/iterations");
  const int largest = n > 0 ? *std::max_element(p.batches.begin(), p.batches.end()) : 0;
  require(p.probe_batch == 0 || p.probe_batch > largest, label, "/probe_batch",
          std::to_string(p.probe_batch) + " is not larger than the largest batch (" + std::to_string(largest) + ")");
  for (size_t i = 0; i < p.iterations.size(); ++i) {
    const IterationMeasurement& it = p.iterations[i];
    const std::string pointer = "/iterations/" + std::to_string(i);
    require(it.batch == p.batches[i], label, pointer + "/batch",
            std::to_string(it.batch) + " where /batches has " + std::to_string(p.batches[i]));
    require(it.oom || it.peak_bytes == std::max(it.passes_peak_bytes, it.optimizer_peak_bytes), label, pointer + "/peak_bytes",
            std::to_string(it.peak_bytes) + " is not the larger of passes_peak_bytes and optimizer_peak_bytes");
  }
  for (size_t i = 0; i < p.segments.size(); ++i) {
    const std::string pointer = "/segments/" + std::to_string(i);
    per_batch(p.segments[i].recompute_s.size(), pointer + "/recompute_s");
    if (!p.segments[i].between_s.empty()) per_batch(p.segments[i].between_s.size(), pointer + "/between_s");
    require(!p.segments[i].probe || p.probe_batch > 0, label, pointer + "/probe", "a probe without /probe_batch");
  }
  for (size_t i = 0; i < p.layers.size(); ++i) {
    const std::string pointer = "/layers/" + std::to_string(i);
    per_batch(p.layers[i].measured.size(), pointer + "/measured");
    require(!p.layers[i].probe || p.probe_batch > 0, label, pointer + "/probe", "a probe without /probe_batch");
    int64_t stored_below = 0;
    for (const StoredHeadroom& r : p.layers[i].stored) {
      require(r.batch > stored_below, label, pointer + "/stored",
              "batch " + std::to_string(r.batch) + " does not follow a smaller one");
      stored_below = r.batch;
    }
    if (!p.layers[i].probe) continue;
    int64_t below = 0;
    for (const ProbeRung& r : p.layers[i].probe->rungs) {
      require(r.batch > below && r.batch < p.probe_batch, label, pointer + "/probe/rungs",
              "batch " + std::to_string(r.batch) + " is not between the rung before it and /probe_batch");
      below = r.batch;
    }
  }
  check_layer_references(p.layers, p.segments, label, "profile");
}

}  // namespace

NetworkLayout Profile::layout() const { return layout_of(segments, layers); }

json profile_to_json(const Profile& p) {
  json layers = json::array(), iterations = json::array(), segments = json::array(), codecs = json::array();
  for (const auto& l : p.layers) layers.push_back(to_json(l));
  for (const auto& i : p.iterations) iterations.push_back(to_json(i));
  for (const auto& s : p.segments) {
    json segment = {{"path", s.path},
                    {"recompute_s", s.recompute_s},
                    {"input", saved_tensor_to_json(s.input)},
                    {"returns_last_layer_output", s.returns_last_layer_output}};
    if (!s.between_s.empty()) segment["between_s"] = s.between_s;
    if (s.probe) segment["probe"] = {{"recompute_s", s.probe->recompute_s}, {"between_s", s.probe->between_s}};
    segments.push_back(segment);
  }
  for (const auto& c : p.codecs) {
    codecs.push_back(codec_to_json(c));
  }
  json plan_steps = json::array();
  for (const auto& s : p.plan_steps) {
    json step = {{"plan", s.plan}, {"batch", s.batch}, {"iteration_s", s.iteration_s}};
    if (s.keep_iteration_s > 0) step["keep_iteration_s"] = s.keep_iteration_s;
    plan_steps.push_back(step);
  }
  return {{version_key, p.version},
          {"network", p.network},
          {"network_config", p.network_config},
          {"precision", p.precision},
          {"machine", to_json(p.machine)},
          {"batches", p.batches},
          {"probe_batch", p.probe_batch},
          {"profiled_blocks", p.profiled_blocks},
          {"iterations", iterations},
          {"layers", layers},
          {"segments", segments},
          {"codecs", codecs},
          {"inverts", inverts_to_json(p.inverts)},
          {"plan_steps", plan_steps},
          {"h2d_bytes_per_s", p.h2d_bytes_per_s},
          {"d2h_bytes_per_s", p.d2h_bytes_per_s}};
}

Profile profile_from_json(const json& doc, const std::string& label) {
  check_version(doc, label);
  validate_json(doc, "profile", label);
  Profile p;
  p.version = doc.at(version_key);
  p.network = doc.at("network");
  p.network_config = doc.at("network_config");
  p.precision = doc.at("precision");
  p.machine = machine_from_json(doc.at("machine"));
  p.batches = doc.at("batches").get<std::vector<int>>();
  p.probe_batch = doc.value("probe_batch", 0);
  p.profiled_blocks = doc.value("profiled_blocks", 0);
  for (const auto& i : doc.at("iterations")) p.iterations.push_back(iteration_from_json(i));
  for (const auto& l : doc.at("layers")) {
    p.layers.push_back(layer_from_json(l, label + ": /layers/" + std::to_string(p.layers.size())));
  }
  for (const auto& s : doc.at("segments")) {
    p.segments.push_back({s.at("path"), s.at("recompute_s").get<std::vector<double>>(), saved_tensor_from_json(s.at("input")),
                          s.value("returns_last_layer_output", false)});
    p.segments.back().between_s = s.value("between_s", std::vector<double>{});
    if (s.contains("probe"))
      p.segments.back().probe = SegmentProbe{s.at("probe").at("recompute_s"), s.at("probe").at("between_s")};
  }
  for (const auto& c : doc.at("codecs")) p.codecs.push_back(codec_from_json(c));
  p.inverts = inverts_from_json(doc);
  for (const auto& s : doc.at("plan_steps")) {
    p.plan_steps.push_back({s.at("plan"), s.at("batch"), s.at("iteration_s"), s.value("keep_iteration_s", 0.0)});
  }
  p.h2d_bytes_per_s = doc.at("h2d_bytes_per_s");
  p.d2h_bytes_per_s = doc.at("d2h_bytes_per_s");
  check_consistency(p, label);
  return p;
}

Profile read_profile(const std::string& path) { return profile_from_json(read_json_file(path, "profile"), path); }

void write_profile(const std::string& path, const Profile& profile) { write_json_file(path, profile_to_json(profile)); }

nlohmann::json codec_to_json(const CodecMeasurement& c) {
  return {{"bits", c.bits},
          {"pack_bytes_per_s", c.pack_bytes_per_s},
          {"unpack_bytes_per_s", c.unpack_bytes_per_s},
          {"pack_seconds_per_call", c.pack_seconds_per_call},
          {"unpack_seconds_per_call", c.unpack_seconds_per_call},
          {"pack_scratch_per_byte", c.pack_scratch_per_byte},
          {"pack_scratch_max", c.pack_scratch_max},
          {"unpack_scratch_per_byte", c.unpack_scratch_per_byte},
          {"unpack_scratch_max", c.unpack_scratch_max}};
}

CodecMeasurement codec_from_json(const nlohmann::json& doc) {
  CodecMeasurement c;
  c.bits = doc.at("bits");
  c.pack_bytes_per_s = doc.at("pack_bytes_per_s");
  c.unpack_bytes_per_s = doc.at("unpack_bytes_per_s");
  c.pack_seconds_per_call = doc.value("pack_seconds_per_call", 0.0);
  c.unpack_seconds_per_call = doc.value("unpack_seconds_per_call", 0.0);
  c.pack_scratch_per_byte = doc.value("pack_scratch_per_byte", 0.0);
  c.pack_scratch_max = doc.value("pack_scratch_max", 0.0);
  c.unpack_scratch_per_byte = doc.value("unpack_scratch_per_byte", 0.0);
  c.unpack_scratch_max = doc.value("unpack_scratch_max", 0.0);
  return c;
}

nlohmann::json inverts_to_json(const std::vector<InvertMeasurement>& inverts) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& i : inverts) {
    out.push_back({{"kind", to_string(i.kind)},
                   {"from_output_bytes_per_s", i.from_output_bytes_per_s},
                   {"native_bytes_per_s", i.native_bytes_per_s}});
  }
  return out;
}

std::vector<InvertMeasurement> inverts_from_json(const nlohmann::json& doc) {
  std::vector<InvertMeasurement> out;
  if (!doc.contains("inverts")) return out;
  for (const auto& i : doc.at("inverts")) {
    out.push_back(
        {layer_kind_from_string(i.at("kind"), "/inverts"), i.at("from_output_bytes_per_s"), i.at("native_bytes_per_s")});
  }
  return out;
}

}  // namespace papaya::model
