#include "model/fit/global_predict.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "model/error.h"
#include "model/fit/global_model.h"
#include "model/fit/measurements.h"
#include "model/json_file.h"

namespace papaya::model {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("papaya-global-predict-" + name)).string();
}

// A series whose runs lie exactly on M(b) = 2048 MiB + 48 MiB * b and
// T(b) = 10 ms + 2 ms * b, at batches 16 to 128, beside a baseline.
double peak_mib(double b) { return 2048 + 48 * b; }
double iter_s(double b) { return 0.010 + 0.002 * b; }

GlobalModel synthetic_model() {
  std::ostringstream csv;
  csv << "gpu,network,precision,strategy,batch,oom,samples_per_s,iter_s,peak_mib\n";
  for (int b : {16, 32, 64, 128}) {
    csv << "v100,net,fp32,quantize4," << b << ",0,," << iter_s(b) << "," << peak_mib(b) << "\n";
    csv << "v100,net,fp32,none," << b << ",0,," << iter_s(b) / 2 << "," << 2 * peak_mib(b) << "\n";
  }
  std::istringstream in(csv.str());
  return fit_global(parse_measurements(in, "runs.csv"), std::nullopt);
}

// The model as predict reads it: written, then loaded.
GlobalModel written_and_read(const GlobalModel& model, const std::string& name) {
  const std::string path = temp_path(name);
  write_json_file(path, to_json(model));
  GlobalModel loaded = load_global_model(path);
  std::remove(path.c_str());
  return loaded;
}

const SeriesPrediction& series(const GlobalPrediction& p, const std::string& strategy) {
  for (const auto& s : p.series) {
    if (s.fit.strategy == strategy) return s;
  }
  throw std::runtime_error("no series " + strategy);
}

TEST(GlobalPredict, TheFileFittedAgainGivesItsFigures) {
  const GlobalModel fitted =
      fit_global(read_measurements(std::string(PAPAYA_SOURCE_DIR) + "/bench/data/papaya-v100.csv"), std::nullopt);
  const GlobalPrediction p = predict_global(written_and_read(fitted, "bench.json"), "bench.json", std::nullopt, std::nullopt);
  ASSERT_EQ(p.series.size(), fitted.series.size());
  for (size_t i = 0; i < fitted.series.size(); ++i) {
    const SeriesFit& a = fitted.series[i];
    const SeriesFit& b = p.series[i].fit;
    const std::string what = a.network + " " + a.precision + " " + a.strategy;
    EXPECT_EQ(b.strategy, a.strategy) << what;
    EXPECT_EQ(b.max_batch, a.max_batch) << what;
    EXPECT_EQ(b.best_batch, a.best_batch) << what;
    EXPECT_EQ(b.best_samples_per_s, a.best_samples_per_s) << what;
    EXPECT_EQ(b.best_measured_samples_per_s, a.best_measured_samples_per_s) << what;
    ASSERT_EQ(b.verdict.has_value(), a.verdict.has_value()) << what;
    if (a.verdict) {
      EXPECT_EQ(b.verdict->helps, a.verdict->helps) << what;
    }
  }
}

TEST(GlobalPredict, FiguresAtABatchAreTheCurves) {
  const GlobalModel model = written_and_read(synthetic_model(), "synthetic.json");
  const GlobalPrediction at_48 = predict_global(model, "m.json", 48, std::nullopt);
  const SeriesPrediction& q = series(at_48, "quantize4");
  ASSERT_TRUE(q.peak_bytes && q.samples_per_s);
  EXPECT_NEAR(*q.peak_bytes, peak_mib(48) * kMiB, 1e-6 * peak_mib(48) * kMiB);
  EXPECT_NEAR(*q.samples_per_s, 48 / iter_s(48), 1e-6 * 48 / iter_s(48));
  EXPECT_FALSE(q.outside_runs);

  const GlobalPrediction at_512 = predict_global(model, "m.json", 512, std::nullopt);
  const SeriesPrediction& far = series(at_512, "quantize4");
  ASSERT_TRUE(far.outside_runs);
  EXPECT_NE(far.outside_runs->find("outside the runs (16-128)"), std::string::npos) << *far.outside_runs;
}

TEST(GlobalPredict, TheBudgetSetsTheLargestBatchAndTheVerdict) {
  const GlobalModel model = written_and_read(synthetic_model(), "budget.json");
  // Half a sample above batch 100's peak: b* is 100; the baseline, twice the
  // bytes, fits 28.
  const double budget = (peak_mib(100) + 24) * kMiB;
  const GlobalPrediction p = predict_global(model, "m.json", std::nullopt, budget);
  const SeriesPrediction& q = series(p, "quantize4");
  ASSERT_TRUE(q.fit.max_batch);
  EXPECT_EQ(*q.fit.max_batch, 100);
  EXPECT_EQ(q.fit.max_batch_limit, "memory");
  EXPECT_EQ(q.fit.budget_bytes, budget);
  ASSERT_TRUE(q.max_batch_samples_per_s);
  EXPECT_NEAR(*q.max_batch_samples_per_s, 100 / iter_s(100), 1e-6 * 100 / iter_s(100));
  EXPECT_FALSE(q.peak_bytes);  // no batch asked
  // The baseline takes half the time a sample: at its b* it is still faster
  // than quantize4 at 100.
  const SeriesPrediction& none = series(p, "none");
  ASSERT_TRUE(none.fit.max_batch);
  EXPECT_EQ(*none.fit.max_batch, static_cast<int>(std::floor((budget / kMiB - 2 * 2048) / 96)));
  ASSERT_TRUE(q.fit.verdict && q.fit.verdict->helps);
  EXPECT_FALSE(*q.fit.verdict->helps);
}

TEST(GlobalPredict, AModelWithoutItsRunsAsksToFitAgain) {
  nlohmann::json doc = to_json(synthetic_model());
  doc["series"][1].erase("measured");
  const std::string path = temp_path("old.json");
  write_json_file(path, doc);
  const GlobalModel old = load_global_model(path);  // read: it predates the field
  std::remove(path.c_str());
  try {
    predict_global(old, path, 32, std::nullopt);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path + ": /series/1/measured: absent"), std::string::npos) << what;
    EXPECT_NE(what.find("fit its measurements again"), std::string::npos) << what;
  }
}

TEST(GlobalPredict, ARunWithoutThroughputIsRefused) {
  nlohmann::json doc = to_json(synthetic_model());
  doc["series"][0]["measured"]["runs"][2]["iter_s"] = nullptr;
  const std::string path = temp_path("no-throughput.json");
  write_json_file(path, doc);
  try {
    load_global_model(path);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": /series/0/measured/runs/2"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace papaya::model
