#include "model/fit/global_fit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "model/error.h"

namespace papaya::model {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

// A series on a V100-16GB measured at batches 8, 16, ..., 64 with exact
// M(b) = alpha*b + beta and T(b) = gamma*b + delta.
MeasuredSeries exact_series(const std::string& precision, const std::string& strategy, double alpha, double beta, double gamma,
                            double delta) {
  MeasuredSeries s;
  s.gpu = "V100-16GB";
  s.gpu_memory_bytes = 16 * kGiB;
  s.network = "net";
  s.precision = precision;
  s.strategy = strategy;
  for (int b = 8; b <= 64; b += 8) {
    MeasuredRun run;
    run.line = static_cast<int>(s.runs.size()) + 2;
    run.batch = b;
    run.samples_per_s = b / (gamma * b + delta);
    run.peak_bytes = alpha * b + beta;
    s.runs.push_back(run);
  }
  return s;
}

MeasuredRun oom_run(int batch, int line) {
  MeasuredRun run;
  run.batch = batch;
  run.oom = true;
  run.line = line;
  return run;
}

const SeriesFit& only(const GlobalModel& m) {
  EXPECT_EQ(m.series.size(), 1u);
  return m.series.front();
}

TEST(GlobalFit, ExactSeriesRecoversAlphaBetaGammaDelta) {
  const double alpha = 200 * kMiB, beta = 2 * kGiB, gamma = 0.004, delta = 0.08;
  const GlobalModel m = fit_global({"test", {exact_series("fp16", "none", alpha, beta, gamma, delta)}}, std::nullopt);
  const SeriesFit& f = only(m);
  EXPECT_EQ(f.points, 8);
  EXPECT_EQ(f.memory_points, 8);
  ASSERT_TRUE(f.memory && f.time_linear && f.time_max);
  EXPECT_NEAR(f.memory->curve.per_sample, alpha, 1e-6 * alpha);
  EXPECT_NEAR(f.memory->curve.fixed, beta, 1e-6 * beta);
  EXPECT_NEAR(f.time_linear->curve.per_sample, gamma, 1e-6 * gamma);
  EXPECT_NEAR(f.time_linear->curve.fixed, delta, 1e-6 * delta);
  EXPECT_NEAR(*f.memory->r2, 1, 1e-9);
  EXPECT_NEAR(*f.r2_time(), 1, 1e-9);
  EXPECT_NEAR(f.iteration_s(100), gamma * 100 + delta, 1e-6);

  // b* = floor((16 GiB - 2 GiB) / 200 MiB) = 71, and the best throughput of a
  // linear T is at b*.
  EXPECT_EQ(f.budget_bytes, 16 * kGiB);
  EXPECT_EQ(f.max_batch, 71);
  EXPECT_EQ(f.max_batch_limit, "memory");
  EXPECT_EQ(f.best_batch, 71);
  EXPECT_NEAR(*f.best_samples_per_s, 71 / (gamma * 71 + delta), 1e-3);
  EXPECT_EQ(f.best_measured_batch, 64);
  EXPECT_FALSE(f.verdict);  // the baseline is not judged

  const GlobalModel smaller = fit_global({"test", {exact_series("fp16", "none", alpha, beta, gamma, delta)}}, 8 * kGiB);
  EXPECT_EQ(only(smaller).max_batch, 30);  // floor(6 GiB / 200 MiB)
}

TEST(GlobalFit, AnOutlierDoesNotWreckTheFit) {
  const double alpha = 100 * kMiB, beta = 3 * kGiB, gamma = 0.002, delta = 0.05;
  MeasuredSeries s = exact_series("fp32", "none", alpha, beta, gamma, delta);
  *s.runs[3].peak_bytes += 4 * kGiB;  // one wild peak
  *s.runs[5].samples_per_s /= 3;      // one run three times slower
  const SeriesFit f = only(fit_global({"test", {s}}, std::nullopt));
  EXPECT_NEAR(f.memory->curve.per_sample, alpha, 0.01 * alpha);
  EXPECT_NEAR(f.memory->curve.fixed, beta, 0.01 * beta);
  EXPECT_NEAR(f.time_linear->curve.per_sample, gamma, 0.01 * gamma);
  EXPECT_NEAR(f.time_linear->curve.fixed, delta, 0.01 * delta);
  EXPECT_EQ(f.max_batch, 133);     // floor(13 GiB / 100 MiB), as without the outlier
  EXPECT_LT(*f.memory->r2, 0.97);  // the outlier still counts in R²
}

TEST(GlobalFit, MemoryFloorAtSmallBatches) {
  // Peak flat at 4.5 GiB up to batch 34, then 30 MiB per sample (Swin-L-like).
  MeasuredSeries s = exact_series("fp16", "none", 0, 0, 0.012, 0.1);
  for (auto& run : s.runs) run.peak_bytes = std::max(4.5 * kGiB, 3.5 * kGiB + 30 * kMiB * run.batch);
  const SeriesFit f = only(fit_global({"test", {s}}, std::nullopt));
  EXPECT_NEAR(f.memory->curve.per_sample, 30 * kMiB, 1e-4 * 30 * kMiB);
  EXPECT_NEAR(f.memory->curve.fixed, 3.5 * kGiB, 1e-4 * kGiB);
  EXPECT_NEAR(f.memory->curve.floor_level(), 4.5 * kGiB, 1e-4 * kGiB);
  EXPECT_GT(*f.memory->r2, 0.9999);
  EXPECT_EQ(f.max_batch, 426);                                        // floor(12.5 GiB / 30 MiB)
  EXPECT_EQ(only(fit_global({"test", {s}}, 4 * kGiB)).max_batch, 0);  // the floor is above the budget
}

TEST(GlobalFit, OomRowsCapTheMaxBatch) {
  MeasuredSeries s = exact_series("fp16", "none", 200 * kMiB, 2 * kGiB, 0.004, 0.08);  // b* 71 from memory
  s.runs.push_back(oom_run(72, 20));
  s.runs.push_back(oom_run(68, 21));
  s.runs.push_back(oom_run(4, 22));  // odd: batch 64 ran
  SeriesFit f = only(fit_global({"test", {s}}, std::nullopt));
  EXPECT_EQ(f.smallest_oom_batch, 68);
  EXPECT_EQ(f.max_batch, 67);
  EXPECT_EQ(f.max_batch_limit, "oom");
  EXPECT_EQ(f.best_batch, 67);
  ASSERT_EQ(f.notes.size(), 1u);
  EXPECT_NE(f.notes[0].find("line 22: out of memory at batch 4, yet batch 64 ran"), std::string::npos) << f.notes[0];

  // The OOM runs had 16 GiB; they bound nothing under a larger budget.
  f = only(fit_global({"test", {s}}, 32 * kGiB));
  EXPECT_EQ(f.max_batch, 153);  // floor(30 GiB / 200 MiB)
  EXPECT_EQ(f.max_batch_limit, "memory");
}

TEST(GlobalFit, AGpuOutsideTheCatalogIsFittedForTheBudget) {
  MeasuredSeries s = exact_series("fp16", "none", 200 * kMiB, 2 * kGiB, 0.004, 0.08);
  s.gpu = "m40";
  s.gpu_memory_bytes.reset();
  s.runs.push_back(oom_run(72, 20));
  try {
    fit_global({"runs.csv", {s}}, std::nullopt);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    for (const char* needle : {"runs.csv:2: gpu 'm40' is not in the hardware catalog", "V100-16GB", "give a budget"}) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  }
  // Its memory is unknown: the OOM runs bound b* under any budget.
  const SeriesFit f = only(fit_global({"runs.csv", {s}}, 32 * kGiB));
  EXPECT_EQ(f.gpu, "m40");
  EXPECT_EQ(f.budget_bytes, 32 * kGiB);
  EXPECT_EQ(f.max_batch, 71);
  EXPECT_EQ(f.max_batch_limit, "oom");
  EXPECT_EQ(only(fit_global({"runs.csv", {s}}, 8 * kGiB)).max_batch, 30);  // floor(6 GiB / 200 MiB)
}

TEST(GlobalFit, TooFewPointsAreReportedNotFitted) {
  MeasuredSeries s = exact_series("fp16", "none", 200 * kMiB, 2 * kGiB, 0.004, 0.08);
  s.runs.resize(1);
  s.runs.push_back(oom_run(16, 9));
  SeriesFit f = only(fit_global({"test", {s}}, std::nullopt));
  EXPECT_EQ(f.points, 1);
  EXPECT_FALSE(f.memory);
  EXPECT_FALSE(f.time_linear);
  EXPECT_FALSE(f.best_samples_per_s);
  EXPECT_EQ(f.max_batch, 15);  // the OOM run still bounds it
  EXPECT_EQ(f.best_measured_samples_per_s, s.runs[0].samples_per_s);
  ASSERT_EQ(f.notes.size(), 2u);
  EXPECT_NE(f.notes[0].find("memory not fitted"), std::string::npos);
  EXPECT_NE(f.notes[1].find("time not fitted"), std::string::npos);

  s = exact_series("fp16", "none", 200 * kMiB, 2 * kGiB, 0.004, 0.08);
  s.runs.resize(2);  // a line, no max form
  f = only(fit_global({"test", {s}}, std::nullopt));
  EXPECT_TRUE(f.memory && f.time_linear);
  EXPECT_FALSE(f.time_max);
  EXPECT_NEAR(f.time_linear->curve.per_sample, 0.004, 1e-8);
}

TEST(GlobalFit, VerdictAgainstTheBaselineOfTheSamePrecision) {
  // Baseline: b* = 71, best 71 / (0.004*71 + 0.08) = 195 samples/s.
  const MeasuredSeries none = exact_series("fp16", "none", 200 * kMiB, 2 * kGiB, 0.004, 0.08);
  // 4x less memory per sample for 10% more time per sample: b* = 286, 213.7 samples/s.
  const MeasuredSeries cheap = exact_series("fp16", "checkpoint", 50 * kMiB, 2 * kGiB, 0.0044, 0.08);
  // 50% more time per sample: b* = 286, 159 samples/s.
  const MeasuredSeries slow = exact_series("fp16", "swap", 50 * kMiB, 2 * kGiB, 0.006, 0.08);
  // As cheap, but 9 GiB more fixed memory: b* = 102, 192.9 samples/s. The
  // analytic condition assumes beta' = beta and says it helps.
  const MeasuredSeries bulky = exact_series("fp16", "quantize4", 50 * kMiB, 11 * kGiB, 0.0044, 0.08);
  const MeasuredSeries other_precision = exact_series("fp32", "checkpoint", 50 * kMiB, 2 * kGiB, 0.0044, 0.08);
  const GlobalModel m = fit_global({"test", {cheap, none, slow, bulky, other_precision}}, std::nullopt);
  ASSERT_EQ(m.series.size(), 5u);
  const auto& [c, n, s, b, o] = std::tie(m.series[0], m.series[1], m.series[2], m.series[3], m.series[4]);
  EXPECT_NEAR(*n.best_samples_per_s, 195.05, 0.05);

  EXPECT_EQ(c.max_batch, 286);
  EXPECT_NEAR(*c.best_samples_per_s, 213.7, 0.1);
  EXPECT_EQ(c.verdict->helps, true);
  EXPECT_EQ(c.verdict->helps_analytic, true);
  EXPECT_NEAR(*c.verdict->baseline_best_samples_per_s, *n.best_samples_per_s, 1e-9);

  EXPECT_EQ(s.verdict->helps, false);
  EXPECT_EQ(s.verdict->helps_analytic, false);

  EXPECT_EQ(b.max_batch, 102);
  EXPECT_EQ(b.verdict->helps, false);
  EXPECT_EQ(b.verdict->helps_analytic, true);

  EXPECT_FALSE(o.verdict->helps);
  EXPECT_NE(o.verdict->note.find("no 'none' series in fp32"), std::string::npos) << o.verdict->note;
}

// Each GPU count has its own baseline; runs with no peak and no OOM row
// (PAPAYA's multi-GPU ones) have no largest batch: their best runs decide.
TEST(GlobalFit, EachGpuCountIsJudgedAgainstItsOwnBaselineOnItsRuns) {
  MeasuredSeries none = exact_series("fp16", "none", 200 * kMiB, 2 * kGiB, 0.004, 0.08);
  MeasuredSeries cheap = exact_series("fp16", "checkpoint", 50 * kMiB, 2 * kGiB, 0.0044, 0.08);
  MeasuredSeries none2 = none, cheap2 = cheap;
  for (MeasuredSeries* s : {&none2, &cheap2}) {
    s->gpus = 2;
    for (auto& run : s->runs) run.peak_bytes.reset();
  }
  for (auto& run : none2.runs) *run.samples_per_s *= 1.2;  // the baseline's runs beat checkpoint's here
  const GlobalModel m = fit_global({"test", {none, cheap, none2, cheap2}}, std::nullopt);
  ASSERT_EQ(m.series.size(), 4u);
  EXPECT_EQ(m.series[1].verdict->helps, true);  // one GPU, as above
  const SeriesFit& two = m.series[3];
  EXPECT_EQ(two.gpus, 2);
  EXPECT_FALSE(two.max_batch);
  EXPECT_EQ(two.verdict->helps, false);
  EXPECT_NE(two.verdict->note.find("best runs"), std::string::npos) << two.verdict->note;
  const auto ratio = two.versus_baseline();
  ASSERT_TRUE(ratio);
  EXPECT_TRUE(ratio->from_runs);
  EXPECT_NEAR(ratio->value, *two.best_measured_samples_per_s / *m.series[2].best_measured_samples_per_s, 1e-12);
}

TEST(GlobalFit, AStrategyHelpsWhereTheBaselineDoesNotFitBatch1) {
  MeasuredSeries none = exact_series("fp16", "none", 0, 0, 0, 1);
  none.runs = {oom_run(1, 2), oom_run(2, 3)};
  const MeasuredSeries checkpoint = exact_series("fp16", "checkpoint", 200 * kMiB, 2 * kGiB, 0.004, 0.08);
  const GlobalModel m = fit_global({"test", {none, checkpoint}}, std::nullopt);
  EXPECT_EQ(m.series[0].max_batch, 0);
  EXPECT_EQ(m.series[1].verdict->helps, true);
  EXPECT_EQ(m.series[1].verdict->note, "the baseline does not fit batch 1");
}

// PAPAYA's ResNet-50 runs on 2 V100s, as the multi-GPU CSV holds them:
// quantize4 is flat at 541-548 samples/s over batches 264-424, and its time
// line has a negative intercept, which put its best at batch 1 (1136
// samples/s, "helps"). Refitted through the origin and read inside the runs,
// it is what the runs say: about 0.76x of `none`'s 725, no gain.
TEST(GlobalFit, ANegativeInterceptIsRefittedAndTheBestStaysInsideTheRuns) {
  std::istringstream csv(
      "gpu,gpus,network,precision,strategy,batch,oom,samples_per_s,iter_s,peak_mib\n"
      "v100,2,resnet50,fp32,none,136,0,723.8,,\n"
      "v100,2,resnet50,fp32,none,152,0,725.44,,\n"
      "v100,2,resnet50,fp32,none,156,1,,,\n"
      "v100,2,resnet50,fp32,none,520,1,,,\n"
      "v100,2,resnet50,fp32,quantize4,264,0,543.31,,\n"
      "v100,2,resnet50,fp32,quantize4,392,0,548.3,,\n"
      "v100,2,resnet50,fp32,quantize4,424,0,541.07,,\n"
      "v100,2,resnet50,fp32,quantize4,428,1,,,\n");
  const GlobalModel m = fit_global(parse_measurements(csv, "multi.csv"), std::nullopt);
  ASSERT_EQ(m.series.size(), 2u);
  const SeriesFit& q = m.series[1];
  ASSERT_TRUE(q.time_linear);
  EXPECT_EQ(q.time_linear->curve.fixed, 0);
  EXPECT_TRUE(std::any_of(q.notes.begin(), q.notes.end(),
                          [](const std::string& n) { return n.find("refitted through the origin") != std::string::npos; }));
  ASSERT_TRUE(q.best_batch);
  EXPECT_GE(*q.best_batch, 264);
  EXPECT_LE(*q.best_batch, *q.max_batch);
  // The flat line's rate lies among the runs' throughputs.
  EXPECT_GE(*q.best_samples_per_s, 541.07);
  EXPECT_LE(*q.best_samples_per_s, 548.3);
  EXPECT_EQ(q.verdict->helps, false);
  const auto ratio = q.versus_baseline();
  ASSERT_TRUE(ratio);
  EXPECT_NEAR(ratio->value, 0.76, 0.02);
}

// A synthetic series whose time has a negative intercept (T = 0.01 b -
// 0.005 s, runs at 8..64): the line promised 200 samples/s at batch 1; its
// best is now read inside the runs, at their throughput.
TEST(GlobalFit, TheBestIsNeverReadBelowTheSmallestRun) {
  const MeasuredSeries none = exact_series("fp16", "none", 200 * kMiB, 2 * kGiB, 0.01, 0.05);
  const MeasuredSeries falling = exact_series("fp16", "quantize4", 50 * kMiB, 2 * kGiB, 0.01, -0.005);
  const GlobalModel m = fit_global({"test", {none, falling}}, std::nullopt);
  const SeriesFit& f = m.series[1];
  ASSERT_TRUE(f.best_batch);
  EXPECT_GE(*f.best_batch, 8);
  double slowest = 1e300, fastest = 0;
  for (const auto& run : falling.runs) {
    slowest = std::min(slowest, *run.samples_per_s);
    fastest = std::max(fastest, *run.samples_per_s);
  }
  EXPECT_GE(*f.best_samples_per_s, slowest);
  EXPECT_LE(*f.best_samples_per_s, fastest);
}

// Two series measured at one batch each (PAPAYA's Swin-L fp16-o2 rows): no
// largest batch, and one run says nothing of a larger batch: undecided.
TEST(GlobalFit, SeriesMeasuredAtOneBatchAreUndecided) {
  std::istringstream csv(
      "gpu,network,precision,strategy,batch,oom,samples_per_s,iter_s,peak_mib\n"
      "v100,swin_large,fp16-o2,checkpoint,8,0,36.52,,\n"
      "v100,swin_large,fp16-o2,none,8,0,41.55,,\n");
  const GlobalModel m = fit_global(parse_measurements(csv, "single.csv"), std::nullopt);
  ASSERT_EQ(m.series.size(), 2u);
  const SeriesFit& checkpoint = m.series[0].strategy == "checkpoint" ? m.series[0] : m.series[1];
  ASSERT_TRUE(checkpoint.verdict);
  EXPECT_FALSE(checkpoint.verdict->helps.has_value());
  EXPECT_NE(checkpoint.verdict->note.find("one batch"), std::string::npos) << checkpoint.verdict->note;
}

}  // namespace
}  // namespace papaya::model
