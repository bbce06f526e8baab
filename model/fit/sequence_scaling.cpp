#include "model/fit/sequence_scaling.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "model/error.h"

namespace papaya::model {
namespace {

using nlohmann::json;

// The quadratic through (s[i], v[i]), i = 0..2, at `at` (Lagrange's form).
double quadratic_at(const double s[3], const double v[3], double at) {
  double sum = 0;
  for (int i = 0; i < 3; ++i) {
    double term = v[i];
    for (int j = 0; j < 3; ++j) {
      if (j != i) term *= (at - s[j]) / (s[i] - s[j]);
    }
    sum += term;
  }
  return sum;
}

// Figures that are rates or times, not sizes: the longest profile's stand
// (times are then scaled by the work, at_sequence_length).
bool measured_not_sized(const std::string& key) {
  return key.find("seconds") != std::string::npos || key == "codecs" || key == "inverts" || key == "h2d_bytes_per_s" ||
         key == "d2h_bytes_per_s" || key == "machine" || key == "roofline";
}

// The three documents (shortest sequence first) walked together: numbers
// that differ become their quadratic at `at` (integers rounded), anything
// else must be equal.
json walk(const json* docs[3], const double s[3], double at, const std::string& where) {
  const json& first = *docs[0];
  if (first.is_number()) {
    double v[3];
    bool integers = true, whole = true;  // integer numbers; whole values (byte counts held as doubles)
    for (int i = 0; i < 3; ++i) {
      if (!docs[i]->is_number()) throw InputError(where + ": a number in one model, not in another");
      v[i] = docs[i]->get<double>();
      integers = integers && docs[i]->is_number_integer();
      whole = whole && std::abs(v[i] - std::round(v[i])) < 1e-6;
    }
    if (v[0] == v[1] && v[1] == v[2]) return first;
    const double value = quadratic_at(s, v, at);
    if (integers) return static_cast<int64_t>(std::llround(value));
    return whole ? std::round(value) : value;
  }
  if (first.is_object()) {
    json out = json::object();
    for (auto it = first.begin(); it != first.end(); ++it) {
      if (measured_not_sized(it.key()) && docs[2]->contains(it.key())) {
        out[it.key()] = docs[2]->at(it.key());
        continue;
      }
      const json* parts[3];
      for (int i = 0; i < 3; ++i) {
        const auto found = docs[i]->find(it.key());
        if (found == docs[i]->end()) throw InputError(where + "/" + it.key() + ": missing from one model");
        parts[i] = &*found;
      }
      out[it.key()] = walk(parts, s, at, where + "/" + it.key());
    }
    return out;
  }
  if (first.is_array()) {
    json out = json::array();
    for (size_t k = 0; k < first.size(); ++k) {
      const json* parts[3];
      for (int i = 0; i < 3; ++i) {
        if (!docs[i]->is_array() || docs[i]->size() != first.size()) {
          throw InputError(where + ": " + std::to_string(first.size()) + " entries in one model, not in another");
        }
        parts[i] = &(*docs[i])[k];
      }
      out.push_back(walk(parts, s, at, where + "/" + std::to_string(k)));
    }
    return out;
  }
  for (int i = 1; i < 3; ++i) {
    if (*docs[i] != first) throw InputError(where + ": " + first.dump() + " in one model, " + docs[i]->dump() + " in another");
  }
  return first;
}

// `c` with its cost per sample times `ratio`.
SaturatingCurve scaled(SaturatingCurve c, double ratio) {
  c.per_sample *= ratio;
  return c;
}

double ratio_of(double at, double there) { return there > 0 ? at / there : 1.0; }

double total_flops(const LayerModel& m) {
  double sum = 0;
  for (const auto& l : m.layers) sum += l.forward_flops_per_sample;
  return sum;
}

double segment_flops(const LayerModel& m, const std::string& segment) {
  double sum = 0;
  for (const auto& l : m.layers) sum += l.segment == segment ? l.forward_flops_per_sample : 0;
  return sum;
}

}  // namespace

LayerModel at_sequence_length(const std::vector<ModelAtLength>& profiled, int seq_len, const std::string& label) {
  if (profiled.size() != 3) {
    throw InputError(label + ": a sequence length needs profiles at three sequence lengths (has " +
                     std::to_string(profiled.size()) + ")");
  }
  std::vector<ModelAtLength> sorted = profiled;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.seq_len < b.seq_len; });
  if (sorted[0].seq_len == sorted[1].seq_len || sorted[1].seq_len == sorted[2].seq_len) {
    throw InputError(label + ": the profiles' sequence lengths must differ (" + std::to_string(sorted[0].seq_len) + ", " +
                     std::to_string(sorted[1].seq_len) + ", " + std::to_string(sorted[2].seq_len) + ")");
  }
  const json docs[3] = {layer_model_to_json(sorted[0].model), layer_model_to_json(sorted[1].model),
                        layer_model_to_json(sorted[2].model)};
  const json* parts[3] = {&docs[0], &docs[1], &docs[2]};
  const double lengths[3] = {static_cast<double>(sorted[0].seq_len), static_cast<double>(sorted[1].seq_len),
                             static_cast<double>(sorted[2].seq_len)};
  LayerModel out =
      layer_model_from_json(walk(parts, lengths, seq_len, label + ": models at different lengths differ at "), label);

  const LayerModel& longest = sorted[2].model;
  for (size_t j = 0; j < out.layers.size(); ++j) {
    const LayerFit& there = longest.layers[j];
    const double ratio = ratio_of(out.layers[j].forward_flops_per_sample, there.forward_flops_per_sample);
    out.layers[j].forward_seconds = scaled(there.forward_seconds, ratio);
    out.layers[j].backward_seconds = scaled(there.backward_seconds, ratio);
  }
  for (size_t j = 0; j < out.segments.size(); ++j) {
    const std::string& path = out.segments[j].path;
    out.segments[j].recompute_seconds =
        scaled(longest.segments[j].recompute_seconds, ratio_of(segment_flops(out, path), segment_flops(longest, path)));
  }
  out.rest_seconds = scaled(longest.rest_seconds, ratio_of(total_flops(out), total_flops(longest)));
  out.optimizer_seconds = longest.optimizer_seconds;
  return out;
}

}  // namespace papaya::model
