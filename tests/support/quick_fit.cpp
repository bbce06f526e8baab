#include "tests/support/quick_fit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model/catalog/target.h"
#include "model/fit/fit_profile.h"
#include "model/plan.h"
#include "model/plan_space/predict.h"
#include "profiler/profiler.h"

namespace papaya::profiler {

model::LayerModel quick_fit(const std::string& network, std::optional<int> seq_len, int profile_blocks) {
  return quick_fit(model::load_network_config(network, seq_len), profile_blocks);
}

model::LayerModel quick_fit(const model::NetworkConfig& network, int profile_blocks, const std::string& precision) {
  ProfileOptions options;
  options.network = network;
  options.profile_blocks = profile_blocks;
  options.precision = precision;
  options.batches = {1, 2, 4};
  options.warmup = 1;
  options.steps = 2;
  options.rounds = 1;
  options.probe_batch = 0;
  return model::fit_profile(profile_network(options), "profile of " + network.name).model;
}

bool same_layer_descriptions(const model::LayerModel& scaled, const model::LayerModel& whole) {
  if (scaled.layers.size() != whole.layers.size()) {
    ADD_FAILURE() << scaled.layers.size() << " layers, not " << whole.layers.size();
    return false;
  }
  for (size_t j = 0; j < whole.layers.size(); ++j) {
    nlohmann::json s, w;
    model::add_layer_description_json(scaled.layers[j], s);
    model::add_layer_description_json(whole.layers[j], w);
    if (s != w) {
      ADD_FAILURE() << "layer " << j << ": " << s.dump() << "\n  against " << w.dump();
      return false;
    }
  }
  return true;
}

void expect_same_bytes(double scaled, double whole, const std::string& what) {
  EXPECT_NEAR(scaled, whole, 1e-9 * std::abs(whole) + 1.0) << what;
}

void expect_same_memory_figures(const model::LayerFit& scaled, const model::LayerFit& whole) {
  for (const auto& [name, figure] : {std::pair{"forward start", &model::LayerFit::forward_start},
                                     {"forward peak", &model::LayerFit::forward_peak},
                                     {"backward start", &model::LayerFit::backward_start},
                                     {"backward peak", &model::LayerFit::backward_peak},
                                     {"forward gap peak", &model::LayerFit::forward_gap_peak},
                                     {"backward gap peak", &model::LayerFit::backward_gap_peak}}) {
    expect_same_bytes((scaled.*figure).per_sample, (whole.*figure).per_sample, whole.path + " " + name + " per sample");
    expect_same_bytes((scaled.*figure).fixed, (whole.*figure).fixed, whole.path + " " + name + " fixed");
  }
}

void expect_same_segments_and_peaks(const model::LayerModel& scaled, const model::LayerModel& whole,
                                    const std::vector<int>& batches) {
  ASSERT_EQ(scaled.segments.size(), whole.segments.size());
  for (size_t j = 0; j < whole.segments.size(); ++j) {
    EXPECT_EQ(scaled.segments[j].path, whole.segments[j].path);
    EXPECT_EQ(scaled.segments[j].input.storage, whole.segments[j].input.storage);
  }
  for (const std::string name : {"keep", "recompute-all", "quantize-4", "recompute-all+quantize-4+invert"}) {
    const model::Plan plan = model::expand_plan_name(name, whole.layout());
    for (int batch : batches) {
      const double s = model::predict(scaled, model::profiled_target(scaled), plan, batch).peak_bytes;
      const double w = model::predict(whole, model::profiled_target(whole), plan, batch).peak_bytes;
      expect_same_bytes(s, w, name + " peak at batch " + std::to_string(batch));
    }
  }
}

double largest_scratch(const model::LayerModel& m, int batch) {
  double largest = 0;
  for (const auto& l : m.layers) {
    largest = std::max(
        {largest, l.forward_peak.at(batch) - l.forward_start.at(batch), l.backward_peak.at(batch) - l.backward_start.at(batch)});
  }
  return largest;
}

void expect_bytes_as_profiled(const model::LayerModel& scaled, const model::LayerModel& whole, int batch) {
  EXPECT_NEAR(scaled.static_bytes, whole.static_bytes, 1.0);
  ASSERT_EQ(scaled.layers.size(), whole.layers.size());
  for (size_t j = 0; j < whole.layers.size(); ++j) {
    const model::LayerFit& s = scaled.layers[j];
    const model::LayerFit& w = whole.layers[j];
    for (const auto& [name, figure] :
         {std::pair{"forward start", &model::LayerFit::forward_start}, {"backward start", &model::LayerFit::backward_start}}) {
      EXPECT_NEAR((s.*figure).at(batch), (w.*figure).at(batch), 1.0) << w.path << " " << name;
    }
  }
  const double scratch = largest_scratch(whole, batch);
  for (const std::string name : {"keep", "recompute-all", "quantize-4", "recompute-all+quantize-4+invert"}) {
    const model::Plan plan = model::expand_plan_name(name, whole.layout());
    const double s = model::predict(scaled, model::profiled_target(scaled), plan, batch).peak_bytes;
    const double w = model::predict(whole, model::profiled_target(whole), plan, batch).peak_bytes;
    EXPECT_NEAR(s, w, scratch) << name;
  }
}

}  // namespace papaya::profiler
