// workflow::ParallelRequest: when it is data parallelism alone, what it
// refuses before any long work, and the ZeRO stages a per-layer plan weighs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/input_error.h"
#include "workflow/parallel_request.h"

namespace papaya::workflow {
namespace {

// `gpus` data-parallel ranks: every degree but data fixed at 1.
ParallelRequest request(int gpus, std::optional<int> zero = std::nullopt, std::string link = "") {
  ParallelRequest r;
  r.question.gpus = gpus;
  r.question.zero_stage = zero;
  r.intra_node_link = std::move(link);
  model::LayoutQuestion& q = r.question;
  q.tensor = q.pipeline = q.virtual_stages = q.context = q.expert = 1;
  return r;
}

TEST(ParallelRequest, IsDataParallelOnlyWhereEveryOtherDegreeIsOneAndNothingOnlyALayoutHasIsAsked) {
  EXPECT_TRUE(request(1).data_parallel_only());
  EXPECT_TRUE(request(8, 3, "NVLink-4").data_parallel_only());
  // Each degree open to a search, or above 1.
  for (std::optional<int> model::LayoutQuestion::*degree :
       {&model::LayoutQuestion::tensor, &model::LayoutQuestion::pipeline, &model::LayoutQuestion::virtual_stages,
        &model::LayoutQuestion::context, &model::LayoutQuestion::expert}) {
    for (const std::optional<int> value : {std::optional<int>(), std::optional<int>(2)}) {
      ParallelRequest r = request(8);
      r.question.*degree = value;
      EXPECT_FALSE(r.data_parallel_only());
    }
  }
  // What the per-layer plan of data-parallel ranks does not model.
  const std::vector<void (*)(ParallelRequest&)> layout_only = {
      [](ParallelRequest& r) { r.question.micro_batch = 2; },          [](ParallelRequest& r) { r.question.global_batch = 64; },
      [](ParallelRequest& r) { r.question.offload_optimizer = true; }, [](ParallelRequest& r) { r.question.plans = {"keep"}; },
      [](ParallelRequest& r) { r.overlap_grad_reduce = false; },       [](ParallelRequest& r) { r.compute_efficiency = 0.4; },
      [](ParallelRequest& r) { r.engine_arguments = true; },
  };
  for (const auto& ask : layout_only) {
    ParallelRequest r = request(8);
    ask(r);
    EXPECT_FALSE(r.data_parallel_only());
  }
  // Across nodes too: the ranks' exchange crosses the link between them (apply_data_parallel).
  ParallelRequest two_nodes = request(8);
  two_nodes.gpus_per_node = 4;
  two_nodes.inter_node_link = "InfiniBand-NDR";
  two_nodes.question.offload_optimizer = false;
  EXPECT_TRUE(two_nodes.data_parallel_only());
}

TEST(ParallelRequest, ShardingOrALinkOnOneGpuIsRefusedNamingIt) {
  EXPECT_NE(test_support::input_error_of([] { request(1, 2).validate(); }).find("ZeRO stage 2"), std::string::npos);
  EXPECT_NE(test_support::input_error_of([] { request(1, std::nullopt, "NVLink-4").validate(); }).find("link NVLink-4"),
            std::string::npos);
  EXPECT_EQ(test_support::input_error_of([] { request(1, 0).validate(); }), "");  // stage 0 shards nothing
  EXPECT_EQ(test_support::input_error_of([] { request(4, 3, "NVLink-4").validate(); }), "");
}

TEST(ParallelRequest, ALinkNeitherInTheCatalogNorAFileIsRefusedNamingIt) {
  const std::string why = test_support::input_error_of([] { request(2, std::nullopt, "no-such-link").validate(); });
  EXPECT_NE(why.find("no-such-link"), std::string::npos) << why;
}

TEST(ParallelRequest, ManyGpusWithoutAKnownInterconnectNeedALinkNamed) {
  EXPECT_NE(test_support::input_error_of([] { request(8).require_link("cpu"); }).find("8 GPUs on cpu"), std::string::npos);
  EXPECT_EQ(test_support::input_error_of([] { request(8, std::nullopt, "NVLink-4").require_link("cpu"); }), "");
  EXPECT_EQ(test_support::input_error_of([] { request(1).require_link("cpu"); }), "");
}

TEST(ParallelRequest, ZeroStagesAreTheOneAskedForElseAllFourWhereThePlannerChoosesOnManyGpus) {
  EXPECT_EQ(request(4, 2).zero_stages(true), std::vector<int>{2});
  EXPECT_EQ(request(4).zero_stages(true), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(request(4).zero_stages(false), std::vector<int>{0});
  EXPECT_EQ(request(1).zero_stages(true), std::vector<int>{0});
}

}  // namespace
}  // namespace papaya::workflow
