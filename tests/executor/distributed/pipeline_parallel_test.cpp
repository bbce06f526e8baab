// Pipeline parallelism in one process: two stages on threads over Gloo on
// loopback, 1F1B, take the AdamW steps one process takes at the global batch,
// each stage holding and stepping its own layers' weights only.
#include "executor/distributed/pipeline_parallel.h"

#include <gtest/gtest.h>

#include "executor/data.h"
#include "executor/distributed/parameter_storage.h"
#include "executor/optimizer.h"
#include "model/error.h"
#include "tests/executor/distributed/ranks_on_threads.h"
#include "tests/executor/moms_fixture.h"

namespace papaya::executor {
namespace {

constexpr int steps = 3, micro_batches = 4;
constexpr int64_t micro_batch = 2;

// The network's parameters after `steps` AdamW steps at the global batch:
// run as one process (collectives nullptr) or as this rank's stage. A
// parameter the stage does not hold is left undefined.
std::vector<torch::Tensor> trained(Network& network, DataSource& data, Collectives* collectives, std::vector<double>& losses) {
  const auto stage = collectives ? std::make_unique<PipelineParallel>(*collectives, network, micro_batches) : nullptr;
  const auto optimizer =
      make_optimizer(network, 1e-3, 0.01,
                     collectives ? std::optional(stage_parameters(network, collectives->world().rank, collectives->world().size))
                                 : std::nullopt);
  for (int step = 0; step < steps; ++step) {
    network.zero_grad();
    const Batch batch = data.next(micro_batch * micro_batches);
    if (stage) {
      losses.push_back(stage->forward_backward(batch));
    } else {
      const torch::Tensor loss = network.loss(batch);
      loss.backward();
      losses.push_back(loss.item<double>());
    }
    optimizer->step();
  }
  std::vector<torch::Tensor> out;
  for (const auto& p : network.parameters()) out.push_back(storage_let_go(p) ? torch::Tensor() : p.detach().clone());
  return out;
}

TEST(PipelineParallel, TwoStagesTakeOneProcesssStepsAtTheGlobalBatch) {
  if (!Collectives::available()) GTEST_SKIP() << "built without Gloo";
  const auto config = testing::tiny_config("llama-tiny");
  std::vector<double> single_losses;
  const auto single =
      trained(*testing::planned(config, "keep").network, *make_synthetic_data(config, torch::kCPU, 0), nullptr, single_losses);
  std::vector<std::vector<torch::Tensor>> stages(2);
  std::vector<std::vector<double>> losses(2);
  // Built here, one after the other: the weights come from the global generator.
  const std::vector<std::shared_ptr<Network>> networks{testing::planned(config, "keep").network,
                                                       testing::planned(config, "keep").network};
  testing::run_on_threads(2, [&](Collectives& collectives) {
    const auto rank = static_cast<size_t>(collectives.world().rank);
    stages[rank] = trained(*networks[rank], *make_synthetic_data(config, torch::kCPU, 0), &collectives, losses[rank]);
  });
  for (int step = 0; step < steps; ++step) {
    for (size_t r = 0; r < 2; ++r) EXPECT_NEAR(losses[r][step], single_losses[step], 1e-5 * single_losses[step]) << step;
  }
  // Every weight on exactly one stage, as one process trained it.
  for (size_t i = 0; i < single.size(); ++i) {
    EXPECT_NE(stages[0][i].defined(), stages[1][i].defined()) << "parameter " << i;
    const torch::Tensor& held = stages[0][i].defined() ? stages[0][i] : stages[1][i];
    if (!held.defined()) continue;
    EXPECT_LT((held - single[i]).norm().item<double>(), 1e-5 * single[i].norm().item<double>()) << "parameter " << i;
  }
}

TEST(PipelineParallel, AStageSplitNamesWhatCannotBeSplit) {
  const auto tied = testing::planned(testing::tiny_config("gpt-tiny"), "keep").network;
  EXPECT_THROW(stage_span(*tied, 0, 2), InputError);  // its head shares the embedding's weight
  const auto llama = testing::planned(testing::tiny_config("llama-tiny"), "keep").network;
  EXPECT_THROW(stage_span(*llama, 0, llama->block_count() + 1), InputError);
  const auto mlp = testing::planned(testing::tiny_config("mlp-tiny"), "keep").network;
  EXPECT_THROW(stage_span(*mlp, 0, 2), InputError);
  const model::StageSpan first = stage_span(*llama, 0, 2), last = stage_span(*llama, 1, 2);
  EXPECT_TRUE(first.first && !first.last && !last.first && last.last);
  EXPECT_EQ(first.end_block, last.first_block);
}

}  // namespace
}  // namespace papaya::executor
