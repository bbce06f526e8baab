// End-to-end runs of `papaya fit --measurements` on the PAPAYA V100 data.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cli/run_papaya.h"

namespace papaya::testing {
namespace {

using nlohmann::json;

const std::string kData = std::string(PAPAYA_SOURCE_DIR) + "/bench/data/papaya-v100.csv";

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("papaya-fit-test-" + name)).string();
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path) << text;
  return path;
}

const json& series(const json& all, const std::string& network, const std::string& precision, const std::string& strategy) {
  for (const auto& s : all) {
    if (s.at("network") == network && s.at("precision") == precision && s.at("strategy") == strategy) return s;
  }
  throw std::runtime_error("no series " + network + " " + precision + " " + strategy);
}

TEST(Fit, MeasurementsJsonHasEverySeries) {
  const std::string out = temp_path("model.json");
  const Outcome run = run_papaya("fit --measurements " + kData + " --json --out " + out);
  ASSERT_EQ(run.code, 0) << run.err;
  const json all = json::parse(run.out);
  ASSERT_TRUE(all.is_array());
  EXPECT_EQ(all.size(), 37u);
  for (const auto& s : all) {
    for (const char* key :
         {"network", "precision", "strategy", "points", "r2_memory", "r2_time", "max_batch", "best_samples_per_s", "helps"}) {
      EXPECT_TRUE(s.contains(key)) << key;
    }
  }

  const json& resnet = series(all, "resnet50", "fp32", "none");
  EXPECT_EQ(resnet.at("points"), 25);
  EXPECT_GT(resnet.at("r2_memory").get<double>(), 0.99);
  EXPECT_GT(resnet.at("r2_time").get<double>(), 0.99);
  EXPECT_EQ(resnet.at("max_batch"), 175);  // below the OOM at 176
  EXPECT_NEAR(resnet.at("best_samples_per_s").get<double>(), 379, 10);
  EXPECT_TRUE(resnet.at("helps").is_null());  // the baseline
  for (const char* strategy : {"quantize4", "swap", "quantize4+swap"}) {
    EXPECT_EQ(series(all, "resnet50", "fp32", strategy).at("helps"), false) << strategy;
  }
  const json& checkpoint = series(all, "bert-large-cased", "fp16", "checkpoint");
  EXPECT_EQ(checkpoint.at("helps"), false);
  EXPECT_EQ(checkpoint.at("max_batch"), 407);  // the OOM at batch 4 is no bound: batch 400 ran
  // Every run ran out of memory: reported, not fitted.
  const json& gpt3_large = series(all, "transformer_lm_gpt3_large", "fp16", "none");
  EXPECT_EQ(gpt3_large.at("points"), 0);
  EXPECT_TRUE(gpt3_large.at("r2_time").is_null());
  EXPECT_FALSE(gpt3_large.at("notes").empty());

  std::ifstream in(out);
  const json doc = json::parse(in);
  std::filesystem::remove(out);
  EXPECT_EQ(doc.at("papaya_model"), 1);
  EXPECT_EQ(doc.at("kind"), "global");
  EXPECT_EQ(doc.at("source"), kData);
  EXPECT_TRUE(doc.at("budget_bytes").is_null());
  EXPECT_EQ(doc.at("series"), all);
}

TEST(Fit, BudgetLowersTheMaxBatch) {
  const Outcome run = run_papaya("fit --measurements " + kData + " --budget 8GiB --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json all = json::parse(run.out);
  const json& resnet = series(all, "resnet50", "fp32", "none");
  EXPECT_EQ(resnet.at("budget_bytes"), 8.0 * (1 << 30));
  EXPECT_NEAR(resnet.at("max_batch").get<int>(), 95, 1);  // (8 GiB - 320 MiB) / 82.6 MiB
}

TEST(Fit, PrintsATablePerGpu) {
  const Outcome run = run_papaya("fit --measurements " + kData);
  ASSERT_EQ(run.code, 0) << run.err;
  for (const char* text : {"V100-16GB, budget 16.00 GiB", "alpha MiB/sample", "R² memory", "best samples/s", "wide_resnet50_2",
                           "baseline", "Notes:"}) {
    EXPECT_NE(run.out.find(text), std::string::npos) << text;
  }
}

// The model file the fit writes, read by predict and limits: the same b*
// and best as the fit at the same budget, the figures at a batch, and b* at
// another budget.
TEST(Fit, PredictAndLimitsReadTheGlobalModel) {
  const TempDir dir("papaya-global-predict");
  const std::string model = dir.path("model.json");
  const Outcome fit = run_papaya("fit --measurements " + kData + " --json --out " + model);
  ASSERT_EQ(fit.code, 0) << fit.err;
  const json fits = json::parse(fit.out);
  const json& fitted = series(fits, "resnet50", "fp32", "none");

  const Outcome predict = run_papaya("predict " + model + " --batch 64 --json");
  ASSERT_EQ(predict.code, 0) << predict.err;
  const json predictions = json::parse(predict.out);
  const json& at_64 = series(predictions, "resnet50", "fp32", "none");
  EXPECT_EQ(at_64.at("max_batch"), fitted.at("max_batch"));
  EXPECT_EQ(at_64.at("best_samples_per_s"), fitted.at("best_samples_per_s"));
  EXPECT_EQ(at_64.at("batch"), 64);
  // M(64) from the fit's memory line.
  const double peak = fitted.at("alpha_bytes_per_sample").get<double>() * 64 + fitted.at("beta_bytes").get<double>();
  EXPECT_NEAR(at_64.at("peak_bytes").get<double>(), std::max(peak, fitted.at("memory_floor_bytes").get<double>()), 1e-6 * peak);

  const Outcome limits = run_papaya("limits " + model + " --budget 8GiB --json");
  ASSERT_EQ(limits.code, 0) << limits.err;
  const json limited = json::parse(limits.out);
  const json& at_8 = series(limited, "resnet50", "fp32", "none");
  EXPECT_NEAR(at_8.at("max_batch").get<int>(), 95, 1);  // as fit --budget 8GiB gives
  EXPECT_FALSE(at_8.contains("peak_bytes"));
  EXPECT_GT(at_8.at("max_batch_samples_per_s").get<double>(), 0);

  const Outcome table = run_papaya("limits " + model);
  ASSERT_EQ(table.code, 0) << table.err;
  for (const char* text : {"papaya limits: global model", "V100-16GB, budget 16.00 GiB", "largest batch", "175 (oom)"}) {
    EXPECT_NE(table.out.find(text), std::string::npos) << text << "\n" << table.out;
  }
  expect_input_error("limits " + model + " --hardware A100-80GB", "a global model holds the GPUs its runs were measured on");
  expect_input_error("predict " + model + " --batch 8 --plan keep", "a global model predicts the GPUs and strategies");
}

// PAPAYA's multi-GPU runs: a table per GPU count, each strategy against the
// `none` of its count, so the paper's finding reads off it (BERT-large
// checkpointing loses on one V100 and wins on 2, 4 and 8; GPT3-small's
// never wins); and the one-GPU fits carried to 2, 4, 8 GPUs over a link.
TEST(Fit, MultiGpuMeasurementsAndTheirPredictionFromOneGpu) {
  const std::string multi = std::string(PAPAYA_SOURCE_DIR) + "/bench/data/papaya-v100-multi.csv";
  Outcome run = run_papaya("fit --measurements " + multi + " --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json all = json::parse(run.out);
  for (const int gpus : {1, 2, 4, 8}) {
    for (const auto& expected : {std::pair{"bert-large-cased", gpus > 1}, std::pair{"transformer_lm_gpt3_small", false}}) {
      const auto& [network, wins] = expected;
      const auto it = std::find_if(all.begin(), all.end(), [&](const json& s) {
        return s["gpus"] == gpus && s["network"] == expected.first && s["strategy"] == "checkpoint";
      });
      ASSERT_NE(it, all.end()) << network << " x " << gpus;
      EXPECT_EQ((*it)["helps"], wins) << network << " x " << gpus;
    }
  }
  run = run_papaya("fit --measurements " + multi + " --gpus 2,8 --link PCIe-3-x16 --gradients bert-large-cased=1.34GB --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json doc = json::parse(run.out);
  EXPECT_EQ(doc["link"], "PCIe-3-x16");
  int compared = 0;
  for (const auto& s : doc["on_gpus"]) {
    EXPECT_EQ(s["network"], "bert-large-cased");
    EXPECT_TRUE(s["gpus"] == 2 || s["gpus"] == 8);
    if (s["strategy"] == "checkpoint") compared += !s["measured_versus_none"].is_null() && !s["versus_none"].is_null();
  }
  EXPECT_EQ(compared, 2);
  run = run_papaya("fit --measurements " + multi + " --gpus 2 --link nvlink-2 --gradients bert-large-cased=1.34GB");
  ASSERT_EQ(run.code, 0) << run.err;
  for (const char* text : {"V100-16GB x 2 (data parallel", "vs none", "Predicted on more GPUs", "over NVLink-2"}) {
    EXPECT_NE(run.out.find(text), std::string::npos) << text;
  }
  expect_input_error("fit --measurements " + multi + " --gpus 2", "--link");
  expect_input_error("fit --measurements " + multi + " --gpus 2 --link nvlink-2 --gradients bert=big", "--gradients");
}

TEST(Fit, BadInputExitsWithCode2) {
  expect_input_error("fit --json", "--measurements FILE.csv");
  expect_input_error("fit --measurements /nonexistent/runs.csv", "/nonexistent/runs.csv: cannot read");
  const std::string header = "gpu,network,precision,strategy,batch,oom,samples_per_s,iter_s,peak_mib\n";
  const std::string malformed = write_temp("malformed.csv", header + "v100,bert,fp16,none,4,0,34.8,0.1,100\nv100,bert,fp16\n");
  expect_input_error("fit --measurements " + malformed, malformed + ":3: 3 cells, expected 9");
  expect_input_error("fit --measurements " + kData + " --budget lots", "--budget");

  // Nothing is written when the input is bad.
  const std::string out = temp_path("not-written.json");
  expect_input_error("fit --measurements " + malformed + " --out " + out, "malformed");
  EXPECT_FALSE(std::filesystem::exists(out));
  std::filesystem::remove(malformed);
}

// The PAPAYA authors' ResNet-50 runs on a K80 (benchmarks/resnet/k80:
// "L0" none, "L1" quantize4; no peaks), refused as "unknown hardware 'k80'"
// before the catalog had the K80 and before --budget let any GPU in.
std::string k80_rows(const std::string& gpu) {
  std::string rows = "gpu,network,precision,strategy,batch,oom,samples_per_s,iter_s,peak_mib\n";
  for (const char* row : {"none,32,0,46.1", "none,48,0,46.84", "none,64,0,50.05", "none,80,0,48.93", "none,96,0,50.16",
                          "none,112,0,50.67", "none,128,1,", "none,144,1,", "quantize4,32,0,32.62", "quantize4,64,0,34.02",
                          "quantize4,128,0,34.66", "quantize4,256,0,35.01", "quantize4,352,0,34.46", "quantize4,384,1,"}) {
    rows += gpu + ",resnet50,fp32," + row + ",,\n";
  }
  return rows;
}

TEST(Fit, K80MeasurementsFitWithAndWithoutABudget) {
  const TempDir dir("papaya-fit-k80");
  const std::string csv = dir.path("k80.csv");
  std::ofstream(csv) << k80_rows("k80");
  for (const std::string budget : {"", " --budget 12GiB"}) {
    const Outcome run = run_papaya("fit --measurements " + csv + budget + " --json");
    ASSERT_EQ(run.code, 0) << run.err;
    const json all = json::parse(run.out);
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0].at("gpu"), "K80");
    EXPECT_EQ(all[0].at("budget_bytes"), 12.0 * (1 << 30));
    EXPECT_EQ(series(all, "resnet50", "fp32", "none").at("max_batch"), 127);       // below the OOM at 128
    EXPECT_EQ(series(all, "resnet50", "fp32", "quantize4").at("max_batch"), 383);  // below the OOM at 384
  }
}

TEST(Fit, AGpuOutsideTheCatalogNeedsABudget) {
  const TempDir dir("papaya-fit-m40");
  const std::string csv = dir.path("m40.csv");
  std::ofstream(csv) << k80_rows("m40");
  const Outcome run = run_papaya("fit --measurements " + csv + " --budget 12GiB");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("m40, budget 12.00 GiB"), std::string::npos) << run.out;
  expect_input_error("fit --measurements " + csv, csv + ":2: gpu 'm40' is not in the hardware catalog (A10, A100-40GB,");
  expect_input_error("fit --measurements " + csv, "give a budget");
}

}  // namespace
}  // namespace papaya::testing
