// The one-GPU global model carried to N data-parallel GPUs.
#include "model/fit/global_data_parallel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace papaya::model {
namespace {

constexpr double kMiB = 1024.0 * 1024.0, kGiB = 1024.0 * kMiB;

// A one-GPU series fitted exactly: M(b) = alpha*b + beta on a 16 GiB GPU, T(b) = gamma*b + delta.
SeriesFit series(const std::string& strategy, double alpha, double gamma) {
  SeriesFit s;
  s.gpu = "V100-16GB";
  s.network = "net";
  s.precision = "fp16";
  s.strategy = strategy;
  s.budget_bytes = 16 * kGiB;
  s.memory = RobustFit<SaturatingCurve>{{0, alpha, 2 * kGiB}};
  s.time_linear = RobustFit<LinearCurve>{{gamma, 0.08}};
  s.max_batch = static_cast<int>(std::floor((s.budget_bytes - 2 * kGiB) / alpha));
  return s;
}

class ScaleToGpus : public ::testing::Test {
 protected:
  // Checkpointing: a quarter the memory per sample, 10% more time per sample (loses on one GPU).
  GlobalModel fitted{"test", std::nullopt, {series("none", 200 * kMiB, 0.004), series("checkpoint", 50 * kMiB, 0.0052)}};
  const double gradients = 1 * kGiB;
};

TEST_F(ScaleToGpus, AFreeLinkMultipliesSamplesAndKeepsTheRatio) {
  const LinkFit free{0, std::numeric_limits<double>::infinity(), std::nullopt};
  const auto out = scale_to_gpus(fitted, {{"net", gradients}}, free, {4});
  ASSERT_EQ(out.size(), 2u);
  const ScaledSeries& none = out[0];
  // b* less the buckets' copy of the gradients: 1 GiB / 200 MiB = 5.12 -> 6 fewer.
  EXPECT_EQ(*none.max_batch, *fitted.series[0].max_batch - 6);
  const double b = *none.max_batch;
  EXPECT_NEAR(*none.best_samples_per_s, 4 * b / (0.004 * b + 0.08), 1e-9);
  EXPECT_LT(*out[1].versus_baseline, 1);  // the one-GPU verdict stands
}

TEST_F(ScaleToGpus, ASlowLinkMakesTheLargerBatchPay) {
  // About the step of `none` at its b*: the exchange hides behind a larger batch's longer backward.
  const LinkFit slow{1e-4, 1 * kGiB / 0.3, std::nullopt};
  const auto two = scale_to_gpus(fitted, {{"net", gradients}}, slow, {2}),
             eight = scale_to_gpus(fitted, {{"net", gradients}}, slow, {8});
  EXPECT_GT(*two[1].versus_baseline, 1);
  EXPECT_GT(*eight[1].versus_baseline, *two[1].versus_baseline);  // more GPUs, more on the wire: pays off more
  EXPECT_FALSE(two[0].measured_versus_baseline);                  // no measured series at 2 GPUs
}

// The best batch is found at the step's breaks, not by trying every batch:
// the same as trying every one, for links that hide all, some or none of it,
// and for a fitted step whose line has a negative intercept (the rate then
// falls past a break: PAPAYA's own fits have some).
TEST_F(ScaleToGpus, TheBestBatchIsEveryBatchsBest) {
  for (const double intercept : {0.01, -0.15}) {
    fitted.series[0].time_max = RobustFit<SaturatingCurve>{{0.2, 0.004, intercept}};  // latency-bound below batch 50
    for (const double seconds : {0.0, 0.04, 0.3, 3.0}) {                              // the whole exchange
      const LinkFit link{0, seconds > 0 ? gradients / seconds : std::numeric_limits<double>::infinity(), std::nullopt};
      for (const ScaledSeries& s : scale_to_gpus(fitted, {{"net", gradients}}, link, {4})) {
        const SeriesFit& one = s.strategy == "none" ? fitted.series[0] : fitted.series[1];
        const double all = link.seconds(gradients, 4), last = link.seconds(25.0 * kMiB, 4);
        double best = 0;
        for (int b = 1; b <= *s.max_batch; ++b) {
          const double t = one.iteration_s(b);
          best = std::max(best, 4 * b / (t + std::max(last, all - backward_share(s.strategy) * t)));
        }
        EXPECT_NEAR(*s.best_samples_per_s, best, 1e-9 * best) << s.strategy << " " << seconds << " " << intercept;
      }
    }
  }
}

TEST_F(ScaleToGpus, ANetworkWithoutGradientBytesIsLeftOut) {
  EXPECT_TRUE(scale_to_gpus(fitted, {{"other", gradients}}, {}, {2}).empty());
}

TEST(BackwardShare, RecomputationLengthensBackward) {
  EXPECT_DOUBLE_EQ(backward_share("none"), 2.0 / 3);
  EXPECT_DOUBLE_EQ(backward_share("quantize4+checkpoint"), 3.0 / 4);
}

}  // namespace
}  // namespace papaya::model
