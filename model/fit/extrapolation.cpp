#include "model/fit/extrapolation.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "model/catalog/target.h"
#include "model/error.h"

namespace papaya::model {
namespace {

using nlohmann::json;

// The quadratic through (x[i], v[i]), i = 0..2, at `at` (Lagrange's form).
double quadratic_at(const double x[3], const double v[3], double at) {
  double sum = 0;
  for (int i = 0; i < 3; ++i) {
    double term = v[i];
    for (int j = 0; j < 3; ++j) {
      if (j != i) term *= (at - x[j]) / (x[i] - x[j]);
    }
    sum += term;
  }
  return sum;
}

// A cubic without a constant term through the three points: v / x is a
// quadratic.
double cubic_from_zero_at(const double x[3], const double v[3], double at) {
  const double per_x[3] = {v[0] / x[0], v[1] / x[1], v[2] / x[2]};
  return at * quadratic_at(x, per_x, at);
}

// Figures that are rates or times, not sizes: the largest model's stand
// (times are then scaled by the work, extrapolated).
bool measured_not_sized(const std::string& key) {
  return key.find("seconds") != std::string::npos || key == "codecs" || key == "inverts" || key == "h2d_bytes_per_s" ||
         key == "d2h_bytes_per_s" || key == "machine" || key == "roofline";
}

struct Walk {
  const double* x;
  double at;
  FlopsGrowth flops;

  // The three documents walked together: numbers that differ become their
  // polynomial at `at` (integers rounded), anything else must be equal.
  json operator()(const json* docs[3], const std::string& key, const std::string& where) const {
    const json& first = *docs[0];
    if (first.is_number()) return number(docs, key, where);
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
        out[it.key()] = (*this)(parts, it.key(), where + "/" + it.key());
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
        out.push_back((*this)(parts, key, where + "/" + std::to_string(k)));
      }
      return out;
    }
    for (int i = 1; i < 3; ++i) {
      if (*docs[i] != first) throw InputError(where + ": " + first.dump() + " in one model, " + docs[i]->dump() + " in another");
    }
    return first;
  }

  json number(const json* docs[3], const std::string& key, const std::string& where) const {
    double v[3];
    bool integers = true, whole = true;  // integer numbers; whole values (byte counts held as doubles)
    for (int i = 0; i < 3; ++i) {
      if (!docs[i]->is_number()) throw InputError(where + ": a number in one model, not in another");
      v[i] = docs[i]->get<double>();
      integers = integers && docs[i]->is_number_integer();
      whole = whole && std::abs(v[i] - std::round(v[i])) < 1e-6;
    }
    if (v[0] == v[1] && v[1] == v[2]) return *docs[0];
    const double value = flops == FlopsGrowth::cubic_from_zero && key == "forward_flops_per_sample" ? cubic_from_zero_at(x, v, at)
                                                                                                    : quadratic_at(x, v, at);
    if (integers) return static_cast<int64_t>(std::llround(value));
    return whole ? std::round(value) : value;
  }
};

// `c` with its cost per sample times `ratio`.
SaturatingCurve scaled(SaturatingCurve c, double ratio) {
  c.per_sample *= ratio;
  return c;
}

double ratio_of(double at, double there) { return there > 0 ? at / there : 1.0; }

double total_bytes_moved(const LayerModel& m) {
  double sum = 0;
  for (const auto& l : m.layers) sum += l.forward_bytes_moved_per_sample;
  return sum;
}

// Its layers' forward time per sample.
double segment_forward(const LayerModel& m, const std::string& segment) {
  double sum = 0;
  for (const auto& l : m.layers) sum += l.segment == segment ? l.forward_seconds.per_sample : 0;
  return sum;
}

// A model's document with its layers' peaks as lines alone: the points of
// their scratch (LayerFit::forward_headroom) are its own size's.
json lines_only(LayerModel m) {
  for (LayerFit& l : m.layers) {
    l.forward_headroom.clear();
    l.backward_headroom.clear();
    l.stored_forward_headroom.clear();
    l.stored_backward_headroom.clear();
    l.stored_backward_gap_headroom.clear();
  }
  return layer_model_to_json(m);
}

}  // namespace

LayerModel extrapolated(const ModelAtSize (&models)[3], double size, FlopsGrowth flops, const std::string& label) {
  if (!(models[0].size < models[1].size && models[1].size < models[2].size)) {
    throw std::logic_error("extrapolated: sizes not distinct and ascending");
  }
  const json docs[3] = {lines_only(models[0].model), lines_only(models[1].model), lines_only(models[2].model)};
  const json* parts[3] = {&docs[0], &docs[1], &docs[2]};
  const double x[3] = {models[0].size, models[1].size, models[2].size};
  LayerModel out = layer_model_from_json(Walk{x, size, flops}(parts, "", label + ": the models differ at "), label);

  const LayerModel& largest = models[2].model;
  for (size_t j = 0; j < out.layers.size(); ++j) {
    const LayerFit& there = largest.layers[j];
    const double ratio = ratio_of(out.layers[j].forward_flops_per_sample, there.forward_flops_per_sample);
    out.layers[j].forward_seconds = scaled(there.forward_seconds, ratio);
    out.layers[j].backward_seconds = scaled(there.backward_seconds, ratio);
    out.layers[j].forward_timed.clear();  // the points its own size was timed at
    out.layers[j].backward_timed.clear();
  }
  // A recompute is its layers' forward again: it grows as their times do
  // (each by its own FLOPs), not by their FLOPs together, which the matmuls
  // lead while small fractions' time goes to the other kernels.
  for (size_t j = 0; j < out.segments.size(); ++j) {
    const std::string& path = out.segments[j].path;
    out.segments[j].recompute_seconds =
        scaled(largest.segments[j].recompute_seconds, ratio_of(segment_forward(out, path), segment_forward(largest, path)));
  }
  // The rest of the step is the glue between layers (sums, splits, copies):
  // it moves bytes, which grow as a quadratic, where the FLOPs grow as a
  // cubic (by FLOPs a few ms at 3/64 of a 310B network became 13 minutes).
  out.rest_seconds = scaled(largest.rest_seconds, ratio_of(total_bytes_moved(out), total_bytes_moved(largest)));
  // A pass over the state, of any batch. On a CPU it streams the state: every
  // term grows with it. On a catalog GPU a small model's step is its
  // kernels' launches (34, 32 and 40 ms at 1/16 to 3/16 of Qwen2-0.5B's
  // shape on an H200, 45 ms whole; by the state, 1.1 s): the bytes the
  // larger model adds are priced on the GPU's bandwidth at the memory
  // efficiency fitted to it.
  const auto gpu = catalog_entry_for(largest.machine);
  if (gpu && largest.roofline) {
    const double added = std::max(0.0, optimizer_bytes_moved(out) - optimizer_bytes_moved(largest));
    out.optimizer_seconds = largest.optimizer_seconds;
    out.optimizer_seconds.fixed += added / (gpu->memory_bandwidth * largest.roofline->forward_memory);
  } else {
    out.optimizer_seconds = largest.optimizer_seconds.times(ratio_of(out.static_bytes, largest.static_bytes));
  }
  return out;
}

}  // namespace papaya::model
