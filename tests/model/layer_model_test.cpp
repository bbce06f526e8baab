// The model file: a round trip keeps every prediction, and bad files are
// InputErrors naming the file and the problem.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "model/error.h"
#include "model/fit/fit_profile.h"
#include "model/json_file.h"
#include "model/plan_space/predict.h"
#include "tests/support/synthetic_profile.h"

namespace papaya::model {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class LayerModelFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("papaya-layer-model-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    model_ = fit_profile(testing::make_profile(testing::gpt_like(2)), "synthetic").model;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  // Loading `doc` fails with a message naming the file and containing `needle`.
  void expect_rejected(const json& doc, const std::string& needle) {
    const std::string path = write("bad.json", doc.dump());
    try {
      read_layer_model(path);
      ADD_FAILURE() << "accepted: " << needle;
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path), std::string::npos) << what;
      EXPECT_NE(what.find(needle), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }

  fs::path dir_;
  LayerModel model_;
};

TEST_F(LayerModelFile, RoundTripKeepsEveryPrediction) {
  model_.layers[1].backward_headroom = {{1, 100}, {8, 2000}, {16, 9000}};  // a scratch measured at rungs
  model_.layers[1].stored_forward_headroom = {{1, 50}, {8, 400}};          // and with every slot stored
  model_.layers[1].stored_backward_headroom = {{1, 80}, {8, 1500}, {16, 7000}};
  model_.layers[1].stored_backward_gap_headroom = {{1, 10}, {8, 90}};
  model_.layers[1].forward_timed = {{1, 2e-4}, {8, 9e-4}, {16, 1.1e-3}};  // its times at the rungs
  model_.layers[1].backward_timed = {{1, 4e-4}, {16, 2e-3}};
  const std::string path = (dir_ / "model.json").string();
  write_layer_model(path, model_);
  const LayerModel read = read_layer_model(path);
  EXPECT_EQ(layer_model_to_json(read), layer_model_to_json(model_));
  const Target a = profiled_target(model_), b = profiled_target(read);
  for (const auto& name : plan_names(model_, a)) {
    const Plan plan = expand_plan_name(name, model_.layout());
    EXPECT_DOUBLE_EQ(predict(read, b, plan, 48).peak_bytes, predict(model_, a, plan, 48).peak_bytes) << name;
    EXPECT_DOUBLE_EQ(predict(read, b, plan, 48).seconds, predict(model_, a, plan, 48).seconds) << name;
  }
}

// A model of some layers (a pipeline stage, a model scaled to more blocks)
// starts from every other figure of its source: none left at its default.
TEST_F(LayerModelFile, WithoutLayersKeepsEveryOtherFigure) {
  model_.probe_batch = 4;
  model_.unattributed_peak = {3, 5};
  model_.optimizer_peak = {7, 11};
  model_.optimizer_seconds = {1e-3, 2e-4, 3e-5};
  model_.rest_seconds = {2e-3, 3e-4, 4e-5};
  CodecMeasurement codec;
  codec.bits = 4, codec.pack_bytes_per_s = 1e9, codec.unpack_bytes_per_s = 2e9;
  model_.codecs = {codec};
  InvertMeasurement invert;
  invert.from_output_bytes_per_s = 3e9, invert.native_bytes_per_s = 4e9;
  model_.inverts = {invert};
  model_.h2d_bytes_per_s = 5e9, model_.d2h_bytes_per_s = 6e9;
  model_.roofline = RooflineFit{"H100-SXM-80GB", 0.6, 0.7, 0.5, 0.8};
  LayerModel cleared = model_;
  cleared.layers.clear();
  cleared.segments.clear();
  ASSERT_FALSE(model_.layers.empty());
  ASSERT_FALSE(model_.segments.empty());
  EXPECT_EQ(layer_model_to_json(model_.without_layers()), layer_model_to_json(cleared));
  EXPECT_NE(layer_model_to_json(LayerModel{}), layer_model_to_json(cleared));
}

TEST_F(LayerModelFile, RejectsBadFiles) {
  const json good = layer_model_to_json(model_);
  expect_rejected(json::array(), "not a papaya model file");
  json doc = good;
  doc["papaya_model"] = layer_model_version + 1;
  expect_rejected(doc, "version 3");
  doc["papaya_model"] = 1;
  expect_rejected(doc, "version 1 was written by an older papaya");
  doc = good;
  doc["kind"] = "global";
  expect_rejected(doc, "/kind");
  doc = good;
  doc.erase("layers");
  expect_rejected(doc, "layers");
  doc = good;
  doc["layers"][1]["seconds"]["forward"]["per_sample"] = -1;
  expect_rejected(doc, "/layers/1/seconds/forward/per_sample");
  doc = good;
  doc["layers"][2]["saved"][0]["storage"] = "nowhere:input";
  expect_rejected(doc, "'nowhere:input' is not a saved tensor of this model");
  doc = good;
  doc["layers"][1]["segment"] = "blocks.1";  // blocks.1 starts again later
  expect_rejected(doc, "do not follow each other");
  doc = good;
  doc["layers"][1]["path"] = doc["layers"][2]["path"];
  expect_rejected(doc, "is repeated");
  doc = good;
  doc["segments"][0]["input"]["storage"] = "x:y";
  expect_rejected(doc, "/segments/0/input/storage");
  doc = good;
  doc["layers"][1]["memory"]["forward_headroom"] = {{8, 100}, {8, 200}};
  expect_rejected(doc, "/layers/1/memory/forward_headroom: batch 8 does not follow a smaller one");
  doc["layers"][1]["memory"]["forward_headroom"] = {{8, 100}};
  expect_rejected(doc, "/layers/1/memory/forward_headroom");
  doc = good;
  doc["layers"][1]["seconds"]["backward_timed"] = {{8, 1e-3}, {4, 2e-3}};
  expect_rejected(doc, "/layers/1/seconds/backward_timed: batch 4 does not follow a smaller one");
}

TEST_F(LayerModelFile, MalformedAndMissingFiles) {
  EXPECT_THROW(read_layer_model(write("broken.json", "{\"papaya_model\": 1,")), InputError);
  EXPECT_THROW(read_layer_model((dir_ / "absent.json").string()), InputError);
}

TEST(FitProfile, RejectsWhatCannotBeFitted) {
  testing::ProfileSpec spec = testing::gpt_like(1);
  spec.batches = {4};
  EXPECT_THROW(fit_profile(testing::make_profile(spec), "one.json"), InputError);
  spec.batches = {1, 2, 4};
  testing::ProfileSpec empty = spec;
  empty.layers.clear();
  empty.segments.clear();
  EXPECT_THROW(fit_profile(testing::make_profile(empty), "empty.json"), InputError);
  Profile p = testing::make_profile(spec);
  p.iterations[1].oom = p.iterations[2].oom = true;  // only batch 1 ran
  try {
    fit_profile(p, "oom.json");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("oom.json"), std::string::npos);
  }
}

TEST(FitProfile, ReportsQualityAndAHoldout) {
  testing::ProfileSpec spec = testing::gpt_like(2);
  spec.unattributed_bytes = 4096;
  const ProfileFit fit = fit_profile(testing::make_profile(spec), "synthetic");
  EXPECT_NEAR(fit.model.unattributed_peak.fixed, 4096, 1e-6);
  EXPECT_NEAR(fit.model.unattributed_peak.per_sample, 0, 1e-6);
  ASSERT_EQ(fit.quality.steps.size(), 3u);
  for (const auto& s : fit.quality.steps) {
    EXPECT_NEAR(s.predicted_peak_bytes, s.measured_peak_bytes, 1e-6 * s.measured_peak_bytes);
    EXPECT_NEAR(s.predicted_seconds, s.measured_seconds, 1e-6 * s.measured_seconds);
  }
  ASSERT_TRUE(fit.quality.holdout.has_value());
  EXPECT_EQ(fit.quality.holdout->batch, 4);
  EXPECT_NEAR(fit.quality.holdout->predicted_peak_bytes, fit.quality.holdout->measured_peak_bytes,
              1e-6 * fit.quality.holdout->measured_peak_bytes);
  EXPECT_DOUBLE_EQ(fit.quality.memory.r_squared, 1.0);
  EXPECT_GT(fit.quality.memory.points, 0);
}

TEST(FitProfile, WarnsWhenTheHoldoutMisses) {
  // Per-sample time that grows with the batch (caches overflowing): fitted on
  // 1 and 2 the model misses batch 4 by more than 5%, and says so.
  testing::ProfileSpec spec = testing::gpt_like(1);
  Profile p = testing::make_profile(spec);
  p.iterations[2].iteration_s *= 1.3;
  const ProfileFit fit = fit_profile(p, "curved.json");
  ASSERT_TRUE(fit.quality.holdout.has_value());
  EXPECT_LT(fit.quality.holdout->predicted_seconds, 0.8 * fit.quality.holdout->measured_seconds);
  bool warned = false;
  for (const auto& note : fit.quality.notes) warned = warned || note.find("fitted without batch 4") != std::string::npos;
  EXPECT_TRUE(warned);
  EXPECT_TRUE(fit_profile(testing::make_profile(spec), "straight.json").quality.notes.empty());
}

TEST(ProfileFile, RoundTripsThroughJson) {
  const Profile p = testing::make_profile(testing::gpt_like(1));
  const Profile back = profile_from_json(profile_to_json(p), "p.json");
  EXPECT_EQ(profile_to_json(back), profile_to_json(p));
  json doc = profile_to_json(p);
  doc["layers"][0]["measured"].erase(0);
  EXPECT_THROW(profile_from_json(doc, "p.json"), InputError);
}

}  // namespace
}  // namespace papaya::model
