#include "model/layer_model.h"

#include <algorithm>

#include "model/error.h"
#include "model/json_file.h"

namespace papaya::model {
using nlohmann::json;

namespace {

json to_json(const LinearCurve& c) { return {{"per_sample", c.per_sample}, {"fixed", c.fixed}}; }
json to_json(const SaturatingCurve& c) { return {{"floor", c.floor}, {"per_sample", c.per_sample}, {"fixed", c.fixed}}; }
LinearCurve linear_from(const json& doc) { return {doc.at("per_sample"), doc.at("fixed")}; }
SaturatingCurve saturating_from(const json& doc) { return {doc.at("floor"), doc.at("per_sample"), doc.at("fixed")}; }

json points_to_json(const std::vector<Sample>& points) {
  json out = json::array();
  for (const Sample& s : points) out.push_back({s.batch, s.value});
  return out;
}

// `parent`'s points under `key` (none where absent); `where` names `parent`.
std::vector<Sample> points_from(const json& parent, const char* key, const std::string& where) {
  std::vector<Sample> out;
  for (const json& point : parent.value(key, json::array())) {
    out.push_back({point.at(0), point.at(1)});
    if (out.size() > 1 && !(out.back().batch > out[out.size() - 2].batch)) {
      throw InputError(where + "/" + key + ": batch " + point.at(0).dump() + " does not follow a smaller one");
    }
  }
  return out;
}

double peak_at(const LinearCurve& start, const LinearCurve& peak, const std::vector<Sample>& headroom, double batch) {
  return headroom.size() < 2 ? peak.at(batch) : start.at(batch) + through_points(headroom, batch);
}

}  // namespace

double forward_peak_at(const LayerFit& layer, double batch) {
  return peak_at(layer.forward_start, layer.forward_peak, layer.forward_headroom, batch);
}

double backward_peak_at(const LayerFit& layer, double batch) {
  return peak_at(layer.backward_start, layer.backward_peak, layer.backward_headroom, batch);
}

namespace {

// The stored step's scratch at `batch` through `points`: the broken line
// between them; past the last, the larger of the last segment's line and
// the line from zero through the last point. A pass's peak is the largest
// of lines in the batch, each of some fixed bytes and some bytes a sample,
// so that its bytes a sample only fall as the batch grows: the line from
// zero is above it past the last point, where the last segment's falls
// below it once a steeper line takes over (an LSTM's backward, its
// gathered gradients past its fixed scratch). Not keep's rule: the stored
// step's figures lower a prediction, and may not lower it past the truth.
double stored_headroom_at(const std::vector<Sample>& points, double batch) {
  const Sample& last = points.back();
  const double along = through_points(points, batch);
  return batch <= last.batch ? along : std::max(along, last.value * batch / last.batch);
}

}  // namespace

double stored_forward_shift_at(const LayerFit& layer, double batch) {
  if (layer.stored_forward_headroom.size() < 2) return 0;
  return stored_headroom_at(layer.stored_forward_headroom, batch) -
         (forward_peak_at(layer, batch) - layer.forward_start.at(batch));
}

double stored_backward_shift_at(const LayerFit& layer, double batch) {
  if (layer.stored_backward_headroom.size() < 2) return 0;
  return stored_headroom_at(layer.stored_backward_headroom, batch) -
         (backward_peak_at(layer, batch) - layer.backward_start.at(batch));
}

double stored_backward_gap_shift_at(const LayerFit& layer, double batch) {
  if (layer.stored_backward_gap_headroom.size() < 2) return 0;
  return stored_headroom_at(layer.stored_backward_gap_headroom, batch) -
         (layer.backward_gap_peak.at(batch) - layer.backward_start.at(batch));
}

double forward_seconds_at(const LayerFit& layer, double batch) {
  return along_points(layer.forward_seconds, layer.forward_timed, batch);
}

double backward_seconds_at(const LayerFit& layer, double batch) {
  return along_points(layer.backward_seconds, layer.backward_timed, batch);
}

NetworkLayout LayerModel::layout() const { return layout_of(segments, layers); }

LayerModel LayerModel::without_layers() const {
  LayerModel out;
  static_cast<ModelWideFigures&>(out) = *this;
  return out;
}

json layer_model_to_json(const LayerModel& m) {
  json layers = json::array(), segments = json::array(), codecs = json::array();
  for (const auto& l : m.layers) {
    json layer = {{"memory",
                   {{"forward_start", to_json(l.forward_start)},
                    {"forward_peak", to_json(l.forward_peak)},
                    {"backward_start", to_json(l.backward_start)},
                    {"backward_peak", to_json(l.backward_peak)},
                    {"forward_gap_peak", to_json(l.forward_gap_peak)},
                    {"backward_gap_peak", to_json(l.backward_gap_peak)}}},
                  {"seconds", {{"forward", to_json(l.forward_seconds)}, {"backward", to_json(l.backward_seconds)}}}};
    if (!l.forward_headroom.empty()) layer["memory"]["forward_headroom"] = points_to_json(l.forward_headroom);
    if (!l.backward_headroom.empty()) layer["memory"]["backward_headroom"] = points_to_json(l.backward_headroom);
    if (!l.stored_forward_headroom.empty())
      layer["memory"]["stored_forward_headroom"] = points_to_json(l.stored_forward_headroom);
    if (!l.stored_backward_headroom.empty())
      layer["memory"]["stored_backward_headroom"] = points_to_json(l.stored_backward_headroom);
    if (!l.stored_backward_gap_headroom.empty())
      layer["memory"]["stored_backward_gap_headroom"] = points_to_json(l.stored_backward_gap_headroom);
    if (!l.forward_timed.empty()) layer["seconds"]["forward_timed"] = points_to_json(l.forward_timed);
    if (!l.backward_timed.empty()) layer["seconds"]["backward_timed"] = points_to_json(l.backward_timed);
    add_layer_description_json(l, layer);
    layers.push_back(layer);
  }
  for (const auto& s : m.segments) {
    segments.push_back({{"path", s.path},
                        {"input", saved_tensor_to_json(s.input)},
                        {"recompute_seconds", to_json(s.recompute_seconds)},
                        {"returns_last_layer_output", s.returns_last_layer_output}});
  }
  for (const auto& c : m.codecs) {
    codecs.push_back(codec_to_json(c));
  }
  json doc = {{"papaya_model", m.version},
              {"kind", "layers"},
              {"network", m.network},
              {"precision", m.precision},
              {"machine",
               {{"device", m.machine.device},
                {"device_name", m.machine.device_name},
                {"memory_bytes", m.machine.memory_bytes},
                {"threads", m.machine.threads},
                {"torch_version", m.machine.torch_version},
                {"cuda_version", m.machine.cuda_version},
                {"papaya_version", m.machine.papaya_version}}},
              {"batches", m.batches},
              {"probe_batch", m.probe_batch},
              {"static_bytes", m.static_bytes},
              {"unattributed_peak", to_json(m.unattributed_peak)},
              {"optimizer_peak", to_json(m.optimizer_peak)},
              {"optimizer_seconds", to_json(m.optimizer_seconds)},
              {"rest_seconds", to_json(m.rest_seconds)},
              {"codecs", codecs},
              {"inverts", inverts_to_json(m.inverts)},
              {"h2d_bytes_per_s", m.h2d_bytes_per_s},
              {"d2h_bytes_per_s", m.d2h_bytes_per_s},
              {"layers", layers},
              {"segments", segments}};
  if (m.roofline) {
    doc["roofline"] = {{"hardware", m.roofline->hardware},
                       {"forward_compute", m.roofline->forward_compute},
                       {"forward_memory", m.roofline->forward_memory},
                       {"backward_compute", m.roofline->backward_compute},
                       {"backward_memory", m.roofline->backward_memory}};
  }
  return doc;
}

LayerModel layer_model_from_json(const json& doc, const std::string& label) {
  if (!doc.is_object() || !doc.contains("papaya_model")) {
    throw InputError(label + ": not a papaya model file (no /papaya_model; papaya fit makes one from a profile)");
  }
  if (doc.contains("kind") && doc["kind"] != "layers") {
    throw InputError(label + ": /kind: a " + doc["kind"].dump() +
                     " model holds no layers; this needs a layer model (papaya fit makes one from a profile)");
  }
  const json& version = doc["papaya_model"];
  if (version.is_number_integer() && version.get<int64_t>() < layer_model_version) {
    throw InputError(label + ": /papaya_model: version " + version.dump() +
                     " was written by an older papaya, without figures this one prices; fit its profile again (profile "
                     "again if papaya fit refuses the profile too)");
  }
  if (version != layer_model_version) {
    throw InputError(label + ": /papaya_model: version " + version.dump() + " (this papaya reads version " +
                     std::to_string(layer_model_version) + ")");
  }
  validate_json(doc, "model-layers", label);
  LayerModel m;
  m.network = doc.at("network");
  m.precision = doc.at("precision");
  const json& mach = doc.at("machine");
  m.machine.device = mach.at("device");
  m.machine.device_name = mach.at("device_name");
  m.machine.memory_bytes = mach.at("memory_bytes");
  m.machine.threads = mach.at("threads");
  m.machine.torch_version = mach.value("torch_version", "");
  m.machine.cuda_version = mach.value("cuda_version", "");
  m.machine.papaya_version = mach.value("papaya_version", "");
  m.batches = doc.at("batches").get<std::vector<int>>();
  m.probe_batch = doc.value("probe_batch", 0);
  m.static_bytes = doc.at("static_bytes");
  m.unattributed_peak = linear_from(doc.at("unattributed_peak"));
  m.optimizer_peak = linear_from(doc.at("optimizer_peak"));
  m.optimizer_seconds = saturating_from(doc.at("optimizer_seconds"));
  m.rest_seconds = saturating_from(doc.at("rest_seconds"));
  for (const auto& c : doc.at("codecs")) m.codecs.push_back(codec_from_json(c));
  m.inverts = inverts_from_json(doc);
  m.h2d_bytes_per_s = doc.at("h2d_bytes_per_s");
  m.d2h_bytes_per_s = doc.at("d2h_bytes_per_s");
  if (doc.contains("roofline")) {
    const json& r = doc.at("roofline");
    m.roofline = RooflineFit{r.at("hardware"), r.at("forward_compute"), r.at("forward_memory"), r.at("backward_compute"),
                             r.at("backward_memory")};
  }
  for (const auto& l : doc.at("layers")) {
    LayerFit layer;
    static_cast<LayerDescription&>(layer) =
        layer_description_from_json(l, label + ": /layers/" + std::to_string(m.layers.size()));
    const json& mem = l.at("memory");
    layer.forward_start = linear_from(mem.at("forward_start"));
    layer.forward_peak = linear_from(mem.at("forward_peak"));
    layer.backward_start = linear_from(mem.at("backward_start"));
    layer.backward_peak = linear_from(mem.at("backward_peak"));
    layer.forward_gap_peak = linear_from(mem.at("forward_gap_peak"));
    layer.backward_gap_peak = linear_from(mem.at("backward_gap_peak"));
    const std::string where = label + ": /layers/" + std::to_string(m.layers.size());
    layer.forward_headroom = points_from(mem, "forward_headroom", where + "/memory");
    layer.backward_headroom = points_from(mem, "backward_headroom", where + "/memory");
    layer.stored_forward_headroom = points_from(mem, "stored_forward_headroom", where + "/memory");
    layer.stored_backward_headroom = points_from(mem, "stored_backward_headroom", where + "/memory");
    layer.stored_backward_gap_headroom = points_from(mem, "stored_backward_gap_headroom", where + "/memory");
    const json& seconds = l.at("seconds");
    layer.forward_seconds = saturating_from(seconds.at("forward"));
    layer.backward_seconds = saturating_from(seconds.at("backward"));
    layer.forward_timed = points_from(seconds, "forward_timed", where + "/seconds");
    layer.backward_timed = points_from(seconds, "backward_timed", where + "/seconds");
    m.layers.push_back(std::move(layer));
  }
  for (const auto& s : doc.at("segments")) {
    m.segments.push_back({s.at("path"), saved_tensor_from_json(s.at("input")), saturating_from(s.at("recompute_seconds")),
                          s.value("returns_last_layer_output", false)});
  }
  check_layer_references(m.layers, m.segments, label, "model");
  return m;
}

LayerModel read_layer_model(const std::string& path) { return layer_model_from_json(read_json_file(path, "model"), path); }

void write_layer_model(const std::string& path, const LayerModel& model) { write_json_file(path, layer_model_to_json(model)); }

}  // namespace papaya::model
