#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "model/error.h"
#include "model/json_file.h"
#include "model/profile.h"

namespace papaya::model {
namespace {

using nlohmann::json;

// A two-layer profile at two batch sizes, the second out of memory.
Profile small_profile() {
  Profile p;
  p.network = "toy";
  p.network_config = {{"name", "toy"}, {"family", "mlp"}};
  p.precision = "fp32";
  p.machine = {"cpu", "Some CPU (2 threads)", 8LL << 30, 2, "1.13.0", "", "0.1.0", "wall-clock"};
  p.batches = {4, 64};
  IterationMeasurement ok{4, false, 5, 0.010, 0.004, 0.005, 0.001, 1000, 5000, 5000, 3000, 5000, 1200};
  IterationMeasurement oom;
  oom.batch = 64;
  oom.oom = true;
  p.iterations = {ok, oom};
  LayerProfile fc;
  fc.path = "blocks.0.fc";
  fc.kind = LayerKind::linear;
  fc.segment = "blocks.0";
  fc.saved = {{"input", SlotKind::activation, "float32", 4, {64}, true, 64, "blocks.0.fc:input", 256}};
  fc.output_bytes_per_sample = 512;
  fc.parameter_bytes = 33280;
  fc.parameter_copy_bytes = 16384;  // its weight in bf16
  fc.forward_flops_per_sample = 16512;
  fc.forward_bytes_moved_per_sample = 768;
  fc.measured = {{1e-4, 2e-4, 1000, 1512, 1600, 2000, 1900, 2500}, {}};
  fc.probe = LayerProbe{5e-3, 1e-2, 800, 1200, {{2, 10, 20, 2e-4, 4e-4}, {4, 15, 30, 3e-4, 5e-4}}};
  fc.stored = {{4, 300, 700, 250}, {256, 500, 900, std::nullopt}};  // the stored step's, and at the probe batch
  LayerProfile act;
  act.path = "blocks.0.act";
  act.kind = LayerKind::relu;
  act.segment = "blocks.0";
  act.saved = {{"output", SlotKind::mask, "float32", 4, {128}, true, 128, "blocks.0.act:output", 512}};
  act.saved[0].saved_after_forward = true;
  act.saved[0].view = "blocks.0.act:output";
  act.output_saved_by = {"blocks.0.act:output"};
  act.measured = {{1e-5, 2e-5, 1512, 2024, 2024, 1700, 1600, 1800}, {}};
  p.layers = {fc, act};
  p.segments = {{"blocks.0", {1.1e-4, 0}, fc.saved[0]}};
  p.segments[0].between_s = {2e-5, 0};
  p.segments[0].probe = SegmentProbe{4e-3, 3e-4};
  p.probe_batch = 256;  // act ran out of memory there: no probe
  return p;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("papaya-profile-test-" + name)).string();
}

// The InputError message of loading `doc` as a profile labelled "p.json".
std::string load_error(const json& doc) {
  try {
    profile_from_json(doc, "p.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Profile, RoundTripsThroughAFile) {
  const Profile p = small_profile();
  const std::string path = temp_path("round-trip.json");
  write_profile(path, p);
  const Profile back = read_profile(path);
  std::filesystem::remove(path);
  EXPECT_EQ(profile_to_json(back), profile_to_json(p));
  EXPECT_EQ(back.layers[0].saved[0].sample_shape, (std::vector<int64_t>{64}));
  EXPECT_TRUE(back.iterations[1].oom);
  EXPECT_EQ(back.machine.timing, "wall-clock");
  EXPECT_DOUBLE_EQ(back.layers[1].measured[0].backward_s, 2e-5);
  EXPECT_EQ(back.layers[0].parameter_copy_bytes, 16384);
  EXPECT_EQ(back.probe_batch, 256);
  ASSERT_TRUE(back.layers[0].probe);
  EXPECT_DOUBLE_EQ(back.layers[0].probe->backward_s, 1e-2);
  ASSERT_EQ(back.layers[0].probe->rungs.size(), 2u);
  EXPECT_EQ(back.layers[0].probe->rungs[1].backward_headroom_bytes, 30);
  EXPECT_DOUBLE_EQ(back.layers[0].probe->rungs[1].backward_s, 5e-4);
  ASSERT_EQ(back.layers[0].stored.size(), 2u);
  EXPECT_EQ(back.layers[0].stored[0].backward_gap_headroom_bytes, std::optional<int64_t>(250));
  EXPECT_FALSE(back.layers[0].stored[1].backward_gap_headroom_bytes);
  EXPECT_TRUE(back.layers[1].saved[0].saved_after_forward);
  EXPECT_EQ(back.layers[1].saved[0].view, "blocks.0.act:output");
  EXPECT_FALSE(back.layers[1].probe);
  ASSERT_TRUE(back.segments[0].probe);
  EXPECT_DOUBLE_EQ(back.segments[0].probe->between_s, 3e-4);
  EXPECT_EQ(back.segments[0].between_s, (std::vector<double>{2e-5, 0}));
  // Profiles written before copies were recorded hold none.
  json older = profile_to_json(p);
  older["layers"][0].erase("parameter_copy_bytes");
  EXPECT_EQ(profile_from_json(older, "older.json").layers[0].parameter_copy_bytes, 0);
  // Nor probes.
  older.erase("probe_batch");
  json untimed = profile_to_json(p);  // rungs before they were timed
  for (json& rung : untimed["layers"][0]["probe"]["rungs"]) rung.erase("forward_s"), rung.erase("backward_s");
  const Profile untimed_back = profile_from_json(untimed, "older.json");
  for (const ProbeRung& rung : untimed_back.layers[0].probe->rungs) EXPECT_FALSE(rung.timed());
  json without_rungs = profile_to_json(p);
  without_rungs["layers"][0]["probe"].erase("rungs");
  EXPECT_TRUE(profile_from_json(without_rungs, "older.json").layers[0].probe->rungs.empty());
  older["layers"][0].erase("probe");
  older["segments"][0].erase("probe");
  older["segments"][0].erase("between_s");
  EXPECT_EQ(profile_from_json(older, "older.json").probe_batch, 0);
  older["layers"][0].erase("stored");  // nor stored steps
  older["layers"][1]["saved"][0].erase("saved_after_forward");
  older["layers"][1]["saved"][0].erase("view");
  const Profile before_stores = profile_from_json(older, "older.json");
  EXPECT_TRUE(before_stores.layers[0].stored.empty());
  EXPECT_FALSE(before_stores.layers[1].saved[0].saved_after_forward);
  EXPECT_EQ(before_stores.layers[1].saved[0].view, "");
}

TEST(Profile, LayoutCarriesSlotsSegmentsAndSharing) {
  const NetworkLayout layout = small_profile().layout();
  EXPECT_EQ(layout.segments, (std::vector<std::string>{"blocks.0"}));
  ASSERT_EQ(layout.layers.size(), 2u);
  const LayoutLayer* act = layout.find_layer("blocks.0.act");
  ASSERT_NE(act, nullptr);
  EXPECT_EQ(act->segment, "blocks.0");
  EXPECT_EQ(act->find_slot("output")->kind, SlotKind::mask);
  EXPECT_EQ(act->find_slot("output")->storage, "blocks.0.act:output");
  EXPECT_EQ(act->output_saved_by, (std::vector<std::string>{"blocks.0.act:output"}));
}

TEST(Profile, ForeignOlderAndNewerDocumentsAreRefused) {
  EXPECT_NE(load_error(json::array()).find("p.json: not a papaya profile"), std::string::npos);
  const json config = read_json_file(config_dir() + "/networks/gpt-tiny.json", "network config");
  EXPECT_NE(load_error(config).find("not a papaya profile"), std::string::npos);
  json newer = profile_to_json(small_profile());
  newer["papaya_profile"] = profile_version + 1;
  EXPECT_NE(load_error(newer).find("p.json: profile version 4 is newer than this papaya reads (3)"), std::string::npos);
  json older = profile_to_json(small_profile());
  older["papaya_profile"] = profile_version - 1;
  EXPECT_NE(load_error(older).find("p.json: profile version 2 was written by an older papaya"), std::string::npos);
}

TEST(Profile, DamagedDocumentsNameWhatIsWrong) {
  const json good = profile_to_json(small_profile());
  json doc = good;
  doc["layers"][1]["measured"].erase(1);
  EXPECT_EQ(load_error(doc), "p.json: /layers/1/measured: 1 entries, but 2 batch sizes in /batches");
  doc = good;
  doc["segments"][0]["recompute_s"].push_back(0.5);
  EXPECT_EQ(load_error(doc), "p.json: /segments/0/recompute_s: 3 entries, but 2 batch sizes in /batches");
  doc = good;
  doc["iterations"][1]["batch"] = 32;
  EXPECT_EQ(load_error(doc), "p.json: /iterations/1/batch: 32 where /batches has 64");
  doc = good;
  doc["layers"][0]["saved"][0]["storage"] = "blocks.0.fc:output";
  EXPECT_EQ(load_error(doc), "p.json: /layers/0/saved/0/storage: 'blocks.0.fc:output' is not a saved tensor of this profile");
  doc = good;
  doc["layers"][0]["segment"] = "blocks.9";
  EXPECT_EQ(load_error(doc), "p.json: /layers/0/segment: 'blocks.9' is not in /segments");
  // The rules a fitted model's layers follow too (one check for both).
  doc = good;
  doc["layers"][1]["path"] = "blocks.0.fc";
  EXPECT_EQ(load_error(doc), "p.json: /layers/1/path: layer 'blocks.0.fc' is repeated");
  doc = good;
  doc["segments"].push_back(doc["segments"][0]);
  doc["segments"][1]["path"] = "blocks.1";
  EXPECT_EQ(load_error(doc), "p.json: /segments/1/path: segment 'blocks.1' has no layers");
  doc = good;
  doc["segments"][0]["input"]["storage"] = "x:y";
  EXPECT_EQ(load_error(doc), "p.json: /segments/0/input/storage: 'x:y' is not a saved tensor of this profile");
  doc = good;
  doc["batches"] = {4, 4};
  EXPECT_EQ(load_error(doc), "p.json: /batches: a batch size is repeated");
  doc = good;
  doc["layers"][0]["measured"][0].erase("backward_s");
  EXPECT_NE(load_error(doc).find("p.json: /layers/0/measured/0"), std::string::npos) << load_error(doc);
  doc = good;
  doc["probe_batch"] = 0;
  EXPECT_EQ(load_error(doc), "p.json: /segments/0/probe: a probe without /probe_batch");
  doc["segments"][0].erase("probe");
  EXPECT_EQ(load_error(doc), "p.json: /layers/0/probe: a probe without /probe_batch");
  doc = good;
  doc["segments"][0]["between_s"].erase(1);
  EXPECT_EQ(load_error(doc), "p.json: /segments/0/between_s: 1 entries, but 2 batch sizes in /batches");
  doc = good;
  doc["probe_batch"] = 64;
  EXPECT_EQ(load_error(doc), "p.json: /probe_batch: 64 is not larger than the largest batch (64)");
  doc = good;
  doc["layers"][0]["probe"]["rungs"][1]["batch"] = 256;
  EXPECT_EQ(load_error(doc), "p.json: /layers/0/probe/rungs: batch 256 is not between the rung before it and /probe_batch");
  doc["layers"][0]["probe"]["rungs"][1]["batch"] = 2;
  EXPECT_EQ(load_error(doc), "p.json: /layers/0/probe/rungs: batch 2 is not between the rung before it and /probe_batch");
  doc = good;
  doc["layers"][0]["stored"][1]["batch"] = 4;
  EXPECT_EQ(load_error(doc), "p.json: /layers/0/stored: batch 4 does not follow a smaller one");
  doc = good;
  doc["layers"][1]["saved"][0]["view"] = "blocks.0.fc:output";
  EXPECT_EQ(load_error(doc), "p.json: /layers/1/saved/0/view: 'blocks.0.fc:output' is not a saved tensor of this profile");
  doc = good;
  doc["machine"]["timing"] = "sundial";
  EXPECT_NE(load_error(doc).find("p.json: /machine/timing"), std::string::npos) << load_error(doc);
}

TEST(Profile, TruncatedFileIsAnInputErrorNamingIt) {
  const std::string path = temp_path("truncated.json");
  const std::string text = profile_to_json(small_profile()).dump(2);
  std::ofstream(path) << text.substr(0, text.size() / 2);
  try {
    read_profile(path);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("malformed JSON in profile"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
  EXPECT_THROW(read_profile(temp_path("missing.json")), InputError);
}

}  // namespace
}  // namespace papaya::model
