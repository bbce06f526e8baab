// End-to-end runs of papaya fit, predict and limits on a synthetic profile.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/profile.h"
#include "tests/cli/run_papaya.h"
#include "tests/support/synthetic_profile.h"

namespace papaya::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ModelCommands : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("papaya-model-cli-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    profile_ = path("profile.json");
    model::write_profile(profile_, make_profile(gpt_like(2)));
    model_ = path("model.json");
    const Outcome fit = run_papaya("fit " + profile_ + " --out " + model_);
    ASSERT_EQ(fit.code, 0) << fit.err;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name)) << text;
    return path(name);
  }

  fs::path dir_;
  std::string profile_, model_;
};

TEST_F(ModelCommands, FitReportsItsQuality) {
  Outcome run = run_papaya("fit " + profile_ + " --out " + path("again.json") + " --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json out = json::parse(run.out);
  EXPECT_GT(out["time"]["r_squared"].get<double>(), 0.999);
  EXPECT_EQ(out["steps"].size(), 3u);
  EXPECT_EQ(out["holdout"]["batch"], 4);
  EXPECT_TRUE(fs::exists(path("again.json")));
  run = run_papaya("fit " + profile_ + " --out " + path("again.json"));
  ASSERT_EQ(run.code, 0) << run.err;
  for (const char* text : {"R^2", "held out", "worst at", "measured peak"})
    EXPECT_NE(run.out.find(text), std::string::npos) << text;
}

TEST_F(ModelCommands, PredictEveryCombination) {
  Outcome run = run_papaya("predict " + model_ + " --batch 16 --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json rows = json::parse(run.out);
  EXPECT_EQ(rows.size(), 30u);  // a CPU profile: no swap
  double keep_peak = 0;
  for (const auto& row : rows) {
    for (const char* key : {"strategy", "batch", "peak_bytes", "samples_per_s", "max_batch"})
      ASSERT_TRUE(row.contains(key)) << key;
    EXPECT_EQ(row["batch"], 16);
    EXPECT_GT(row["samples_per_s"].get<double>(), 0);
    if (row["strategy"] == "keep") keep_peak = row["peak_bytes"];
  }
  for (const auto& row : rows) {
    if (row["strategy"] != "keep") {
      EXPECT_LT(row["peak_bytes"].get<double>(), keep_peak) << row["strategy"];
    }
  }
  run = run_papaya("predict " + model_ + " --batch 16");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("recompute-all+quantize-2+invert"), std::string::npos);
}

TEST_F(ModelCommands, PredictOnePlanOnOtherHardware) {
  const Outcome run = run_papaya("predict " + model_ + " --batch 64 --hardware A100-40GB --plan quantize-4+swap --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json rows = json::parse(run.out);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["strategy"], "quantize-4+swap");
  EXPECT_EQ(rows[0]["hardware"], "A100-40GB");
  EXPECT_GT(rows[0]["host_bytes"].get<double>(), 0);
  EXPECT_NE(rows[0]["notes"].dump().find("typical"), std::string::npos);
  // A plan file.
  const std::string plan =
      write("plan.json", R"({"papaya_plan": 1, "base": "quantize-8", "segments": {"blocks.0": "recompute"}})");
  const Outcome file = run_papaya("predict " + model_ + " --batch 8 --plan " + plan + " --json");
  ASSERT_EQ(file.code, 0) << file.err;
  EXPECT_EQ(json::parse(file.out)[0]["strategy"], "plan");
}

// A hardware entry with measured kernel figures (what `papaya calibrate`
// writes), given as --hardware FILE.json.
TEST_F(ModelCommands, PredictOnAGpuEntryFileUsesItsKernelFigures) {
  json entry = json::parse(std::ifstream(std::string(PAPAYA_SOURCE_DIR) + "/configs/hardware/H200.json"));
  entry["name"] = "my-h200";
  entry["kernel_model"] = {{"matmul_efficiency", {{"fp32", 0.3}, {"bf16", 0.3}}},
                           {"attention_efficiency", {{"forward", 0.3}, {"backward", 0.2}}},
                           {"memory_efficiency", 0.4},
                           {"kernel_latency_us", 20},
                           {"source", "papaya calibrate, in a test"}};
  const std::string file = write("my-h200.json", entry.dump());
  const Outcome mine = run_papaya("predict " + model_ + " --batch 16 --plan keep --hardware " + file + " --json");
  ASSERT_EQ(mine.code, 0) << mine.err;
  const json row = json::parse(mine.out)[0];
  EXPECT_EQ(row["hardware"], "my-h200");
  EXPECT_NE(row["notes"].dump().find("papaya calibrate, in a test"), std::string::npos) << row["notes"];
  const Outcome typical = run_papaya("predict " + model_ + " --batch 16 --plan keep --hardware H200 --json");
  ASSERT_EQ(typical.code, 0) << typical.err;
  EXPECT_LT(row["samples_per_s"].get<double>(), json::parse(typical.out)[0]["samples_per_s"].get<double>());
  entry["kernel_model"]["memory_efficiency"] = 2;
  write("my-h200.json", entry.dump());
  expect_input_error("predict " + model_ + " --batch 16 --hardware " + file, "my-h200.json");
}

TEST_F(ModelCommands, PredictPlotsMemoryAndThroughputAgainstTheBatch) {
  Outcome run = run_papaya("predict " + model_ + " --batch 16 --plot " + path("predict.svg"));
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("figure written to"), std::string::npos);
  std::stringstream svg;
  svg << std::ifstream(path("predict.svg")).rdbuf();
  for (const char* text : {"<svg", "peak memory", "throughput", "budget", "keep", "batch 16"}) {
    EXPECT_NE(svg.str().find(text), std::string::npos) << text;
  }
  run = run_papaya("predict " + model_ + " --batch 16 --plan quantize-4 --json --plot " + path("predict.png"));
  ASSERT_EQ(run.code, 0) << run.err;
  std::stringstream png;
  png << std::ifstream(path("predict.png"), std::ios::binary).rdbuf();
  EXPECT_EQ(png.str().substr(1, 3), "PNG");
}

TEST_F(ModelCommands, LimitsPerHardware) {
  Outcome run = run_papaya("limits " + model_ + " --hardware A100-40GB,h100 --budget 2GiB --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json rows = json::parse(run.out);
  EXPECT_EQ(rows.size(), 2u * 60u);
  for (const auto& row : rows) {
    EXPECT_GT(row["max_batch"].get<int64_t>(), 0);
    EXPECT_LE(row["peak_bytes"].get<double>(), 2.0 * (1 << 30));
  }
  run = run_papaya("limits " + model_ + " --hardware T4");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("T4"), std::string::npos);
  EXPECT_NE(run.out.find("note: T4"), std::string::npos);
}

// --gpus: per-GPU figures, samples/s of all GPUs, the exchange on the link:
// the same memory plus the buckets' copy of the gradients on every GPU
// (ZeRO-0), less with each stage; the link from --link or the hardware's own.
TEST_F(ModelCommands, PredictAndLimitsForDataParallelGpus) {
  const auto keep = [&](const std::string& extra) {
    const Outcome run = run_papaya("predict " + model_ + " --batch 16 --plan keep --hardware V100 --json" + extra);
    EXPECT_EQ(run.code, 0) << run.err;
    return json::parse(run.out).at(0);
  };
  const json one = keep(""), eight = keep(" --gpus 8"), sharded = keep(" --gpus 8 --zero 3"),
             slow = keep(" --gpus 8 --link ethernet-10g");
  EXPECT_EQ(eight["data_parallel"]["gpus"], 8);
  EXPECT_EQ(eight["data_parallel"]["link"], "NVLink-2");  // the V100's interconnect
  EXPECT_EQ(slow["data_parallel"]["link"], "Ethernet-10G");
  EXPECT_GT(eight["peak_bytes"].get<double>(), one["peak_bytes"].get<double>());
  EXPECT_LT(sharded["peak_bytes"].get<double>(), one["peak_bytes"].get<double>());
  EXPECT_LT(sharded["static_bytes"].get<double>(), one["static_bytes"].get<double>());
  // Eight GPUs take eight times the samples of one in a step a little longer, or a lot over a slow link.
  EXPECT_GE(eight["seconds"].get<double>(), one["seconds"].get<double>());
  EXPECT_GT(slow["seconds"].get<double>(), eight["seconds"].get<double>());
  EXPECT_NEAR(eight["samples_per_s"].get<double>(), 8 * 16 / eight["seconds"].get<double>(),
              1e-9 * eight["samples_per_s"].get<double>());
  Outcome run = run_papaya("limits " + model_ + " --hardware A100-40GB,h100 --gpus 4 --zero 1");
  ASSERT_EQ(run.code, 0) << run.err;
  for (const char* text :
       {"A100-40GB x 4 GPUs (ZeRO-1, over NVLink-3", "H100-SXM-80GB x 4 GPUs (ZeRO-1, over NVLink-4", "per GPU"}) {
    EXPECT_NE(run.out.find(text), std::string::npos) << text << "\n" << run.out;
  }
  expect_input_error("predict " + model_ + " --batch 4 --gpus 2",
                     "no interconnect known; name a link");  // the profiled CPU has no interconnect
  expect_input_error("predict " + model_ + " --batch 4 --zero 1",
                     "layout: ZeRO stage 1 shards across data-parallel ranks: it needs 2 or more (d x c is 1)");
  expect_input_error("predict " + model_ + " --batch 4 --hardware V100 --link nvlink-2",
                     "link nvlink-2 joins GPUs: it needs 2 GPUs or more");
  expect_input_error("predict " + model_ + " --batch 4 --hardware V100 --gpus 2 --link pigeon", "pigeon");
}

// Data parallelism asked as a layout (every other degree 1, one micro-batch)
// is the data-parallel answer: the same document to the byte, on one GPU
// without a link to name, on many for any network (this one has no
// attention: no layout splits it).
TEST_F(ModelCommands, DataParallelismGivenAsALayoutIsTheDataParallelAnswer) {
  const auto same = [&](const std::string& command, const std::string& as_layout) {
    const Outcome plain = run_papaya(command), laid = run_papaya(command + as_layout);
    ASSERT_EQ(plain.code, 0) << plain.err;
    ASSERT_EQ(laid.code, 0) << laid.err;
    EXPECT_EQ(laid.out, plain.out) << command + as_layout;
  };
  same("predict " + model_ + " --batch 4 --json", " --tp 1");
  same("predict " + model_ + " --batch 16 --hardware V100 --gpus 8 --zero 1 --json", " --tp 1 --pp 1 --cp 1 --ep 1 --sp off");
  same("plan " + model_ + " --budget 1GiB --hardware V100 --gpus 4 --json", " --tp 1 --pp 1 --vp 1 --cp 1 --ep 1");
  same("limits " + model_ + " --hardware V100 --gpus 4 --json", " --tp 1 --pp 1 --vp 1 --cp 1 --ep 1");
  // A layout beyond data parallelism splits the network's blocks, which this one (no attention) has none of.
  expect_input_error("predict " + model_ + " --batch 4 --hardware V100 --gpus 4 --tp 2", "no attention layers");
}

// limits --network profiles the network itself; a step too slow to profile at
// its length (here a million tokens) is modelled from 16, 32 and 64 tokens,
// and attention's square of a million tokens fits no GPU.
TEST(Limits, ProfileTheNetworkGivenAndSayWhatItsStateTakes) {
  Outcome run = run_papaya("limits --network llama-tiny --seq-len 48 --hardware h100 --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json rows = json::parse(run.out);
  const double parameters = rows.at(0).at("parameters").get<double>();
  EXPECT_EQ(parameters, 108864);  // model/catalog/parameter_count.h, as the zoo test checks against the network
  EXPECT_EQ(rows.at(0).at("static_bytes").get<double>(), 16 * parameters);  // fp32 weights, gradients, AdamW m and v
  EXPECT_GT(rows.at(0).at("max_batch").get<int64_t>(), 0);
  run = run_papaya("limits --network llama-tiny --seq-len 1000000 --hardware h100 --json");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.err.find("profiling at 16, 32 and 64 tokens and modelling 1000000 from them"), std::string::npos) << run.err;
  for (const auto& row : json::parse(run.out)) EXPECT_EQ(row.at("max_batch"), 0) << row.at("strategy");
  expect_input_error("limits --network llama-tiny --hardware h999", "unknown hardware 'h999'");
  expect_input_error("limits --hardware h100", "give a model file or --network");
}

// --profile-parts: the model from three fractions of the shape answers as the
// one from the network itself: the same static bytes, the largest batches
// the same or one apart (the bytes held are exact, a kernel's scratch in a
// peak need not be: model/fit/shape_scaling.h, and ShapeScaling's tests);
// parts the shape does not divide into are refused before profiling.
TEST(Limits, FractionsOfTheShapeGiveTheWholeNetworksBatches) {
  const std::string limits = "limits --network llama-tiny --seq-len 48 --hardware h100,A10 --json --profile-parts ";
  const Outcome whole = run_papaya(limits + "1");
  ASSERT_EQ(whole.code, 0) << whole.err;
  const Outcome cut = run_papaya(limits + "4");
  ASSERT_EQ(cut.code, 0) << cut.err;
  EXPECT_NE(cut.err.find("at 1/4, 2/4 and 3/4 of its shape (12 to 36 tokens, head dimensions 4 to 12"), std::string::npos)
      << cut.err;
  const json w = json::parse(whole.out), c = json::parse(cut.out);
  ASSERT_EQ(w.size(), c.size());
  for (size_t i = 0; i < w.size(); ++i) {
    EXPECT_NEAR(c[i].at("max_batch").get<double>(), w[i].at("max_batch").get<double>(), 1.0)
        << w[i].at("strategy") << " on " << w[i].at("hardware");
    EXPECT_EQ(c[i].at("static_bytes"), w[i].at("static_bytes")) << w[i].at("strategy");
  }
  expect_input_error(limits + "3", "--profile-parts: must be 1 or a power of two of at least 4 (got '3')");
  expect_input_error(limits + "16", "divide into 8 parts or a power of two fewer, not 16");
  expect_input_error("limits --network resnet-tiny --hardware h100 --profile-parts 4", "no tokens and heads to cut");
}

// A ViT slow to profile (a tenth of a TFLOP a step) is cut in its widths
// alone, its patches kept: it has no shorter sequences to weigh against.
TEST(Limits, AViTIsCutInItsWidthsAlone) {
  const TempDir dir("papaya-limits-vit");
  std::ofstream(dir.path("vit.json"))
      << R"({"name": "vit-wide", "family": "vit", "layers": 4, "d_model": 1024, "heads": 16, "mlp_ratio": 4,
             "image_size": 224, "patch": 16, "channels": 3, "classes": 10})";
  const Outcome run = run_papaya("limits --network " + dir.path("vit.json") + " --hardware h100 --json");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.err.find("of its widths (its 197 patches kept"), std::string::npos) << run.err;
  EXPECT_GT(json::parse(run.out).at(0).at("max_batch").get<int64_t>(), 0);
}

TEST_F(ModelCommands, BadInputExitsTwo) {
  expect_input_error("fit " + path("absent.json") + " --out " + path("m.json"), "absent.json");
  expect_input_error("fit " + write("broken.json", "{") + " --out " + path("m.json"), "malformed JSON");
  ProfileSpec spec = gpt_like(1);
  spec.batches = {2};
  model::write_profile(path("one.json"), make_profile(spec));
  expect_input_error("fit " + path("one.json") + " --out " + path("m.json"), "two batch sizes");
  expect_input_error("predict " + profile_ + " --batch 8", "not a papaya model file");
  // A global model is read as one, and checked as one.
  expect_input_error("predict " + write("global.json", R"({"papaya_model": 1, "kind": "global"})") + " --batch 8",
                     "global.json: /: Missing required property");
  expect_input_error("predict " + model_ + " --batch 8 --hardware TPU-v9", "unknown hardware 'TPU-v9'");
  expect_input_error("predict " + model_ + " --batch 8 --plan quantize-3", "quantize-3");
  expect_input_error("predict " + model_ + " --batch 8 --plan swap", "host link");
  expect_input_error("predict " + model_ + " --batch 0", "--batch");
  expect_input_error("predict " + model_ + " --batch 8 --plot " + path("p.gif"), ".svg or .png");
  expect_input_error("predict " + model_ + " --batch 8 --budget lots", "--budget");
  expect_input_error("limits " + model_ + " --hardware A100-40GB,,T4", "empty name");
  // An entry twice (by its name and an alias) would be two equal columns.
  expect_input_error("limits " + model_ + " --hardware H100-SXM-80GB,h100", "H100-SXM-80GB is named twice");
  expect_input_error("limits " + model_, "--hardware");
  // A budget beyond a device's memory would find batches that cannot fit there.
  expect_input_error("predict " + model_ + " --batch 8 --hardware T4 --budget 20GiB", "more than the memory of T4 (16.00 GiB)");
  expect_input_error("limits " + model_ + " --hardware A100-40GB,T4 --budget 20GiB", "more than the memory of T4");
  expect_input_error("plan " + model_ + " --budget 1TiB --hardware A100-40GB", "more than the memory of A100-40GB");
}

}  // namespace
}  // namespace papaya::testing
