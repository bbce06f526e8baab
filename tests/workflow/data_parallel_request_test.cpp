// workflow::DataParallelRequest: what it says was asked for, what it refuses
// before any long work, and the ZeRO stages it has a plan weigh.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/input_error.h"
#include "workflow/data_parallel.h"

namespace papaya::workflow {
namespace {

DataParallelRequest request(int gpus, std::optional<int> zero = std::nullopt, std::string link = "") {
  DataParallelRequest r;
  r.gpus = gpus;
  r.zero = zero;
  r.link = std::move(link);
  return r;
}

TEST(DataParallelRequest, IsRequestedByMoreGpusAStageOrALink) {
  EXPECT_FALSE(request(1).requested());
  EXPECT_TRUE(request(2).requested());
  EXPECT_TRUE(request(1, 0).requested());
  EXPECT_TRUE(request(1, std::nullopt, "NVLink-4").requested());
}

TEST(DataParallelRequest, ShardingOrALinkOnOneGpuIsRefusedNamingIt) {
  EXPECT_NE(test_support::input_error_of([] { request(1, 2).validate(); }).find("ZeRO stage 2"), std::string::npos);
  EXPECT_NE(test_support::input_error_of([] { request(1, std::nullopt, "NVLink-4").validate(); }).find("link NVLink-4"),
            std::string::npos);
  EXPECT_EQ(test_support::input_error_of([] { request(1, 0).validate(); }), "");  // stage 0 shards nothing
  EXPECT_EQ(test_support::input_error_of([] { request(4, 3, "NVLink-4").validate(); }), "");
}

TEST(DataParallelRequest, ALinkNeitherInTheCatalogNorAFileIsRefusedNamingIt) {
  const std::string why = test_support::input_error_of([] { request(2, std::nullopt, "no-such-link").validate(); });
  EXPECT_NE(why.find("no-such-link"), std::string::npos) << why;
}

TEST(DataParallelRequest, ManyGpusWithoutAKnownInterconnectNeedALinkNamed) {
  EXPECT_NE(test_support::input_error_of([] { request(8).require_link("cpu"); }).find("8 GPUs on cpu"), std::string::npos);
  EXPECT_EQ(test_support::input_error_of([] { request(8, std::nullopt, "NVLink-4").require_link("cpu"); }), "");
  EXPECT_EQ(test_support::input_error_of([] { request(1).require_link("cpu"); }), "");
}

TEST(DataParallelRequest, StagesAreTheOneAskedForElseAllFourWhereThePlannerChoosesOnManyGpus) {
  EXPECT_EQ(request(4, 2).stages(true), std::vector<int>{2});
  EXPECT_EQ(request(4).stages(true), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(request(4).stages(false), std::vector<int>{0});
  EXPECT_EQ(request(1).stages(true), std::vector<int>{0});
}

}  // namespace
}  // namespace papaya::workflow
