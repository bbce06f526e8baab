// Tensor parallelism in one process: two ranks on threads over Gloo on
// loopback, each holding its share of every projection's heads or width and
// of the vocabulary (Megatron-LM's split), with and without the tokens
// between the projections split (sequence parallelism), take the AdamW steps
// one process takes at the same batch.
#include "executor/distributed/tensor_parallel.h"

#include <gtest/gtest.h>

#include "executor/data.h"
#include "executor/optimizer.h"
#include "model/error.h"
#include "tests/executor/distributed/ranks_on_threads.h"
#include "tests/executor/moms_fixture.h"

namespace papaya::executor {
namespace {

constexpr int steps = 3;
constexpr int64_t batch = 4;

struct Trained {
  std::vector<double> losses;
  int64_t parameters = 0;                 // elements held
  std::vector<torch::Tensor> norm_grads;  // each norm's weight's, at the first step
};

// `steps` AdamW steps of `network` at `batch`, split over `collectives`' ranks (if any).
Trained trained(Network& network, const model::NetworkConfig& config, Collectives* collectives, bool sequence_parallel) {
  const auto group = collectives ? tensor_group(*collectives, sequence_parallel) : nullptr;
  if (group) network.split_tensors(group);
  const auto optimizer = make_optimizer(network, 1e-3, 0.01);
  const auto data = make_synthetic_data(config, torch::kCPU, 0);
  Trained out;
  for (int step = 0; step < steps; ++step) {
    network.zero_grad();
    const torch::Tensor loss = network.loss(data->next(batch));
    loss.backward();
    if (group) sum_replicated_gradients(network, *group);
    for (const Layer* layer : network.layers()) {
      if (step == 0 && layer->kind() == LayerKind::rmsnorm) out.norm_grads.push_back(layer->parameters()[0].grad().clone());
    }
    optimizer->step();
    out.losses.push_back(loss.item<double>());
  }
  for (const auto& p : network.parameters()) out.parameters += p.numel();
  return out;
}

// Every loss equal (the second and third only where every gradient was
// right), every weight but the norms' split in two, and the norms' gradients
// one process's.
TEST(TensorParallel, TwoRanksTakeOneProcesssSteps) {
  if (!Collectives::available()) GTEST_SKIP() << "built without Gloo";
  const auto config = testing::tiny_config("llama-tiny");
  const auto whole = testing::planned(config, "keep").network;
  int64_t norms = 0;
  for (const Layer* layer : whole->layers()) {
    if (layer->kind() == LayerKind::rmsnorm) norms += layer->parameters()[0].numel();
  }
  const Trained single = trained(*whole, config, nullptr, false);
  for (const bool sequence_parallel : {false, true}) {
    // Built here, one after the other: the weights come from the global generator.
    const std::vector<std::shared_ptr<Network>> networks{testing::planned(config, "keep").network,
                                                         testing::planned(config, "keep").network};
    std::vector<Trained> ranks(2);
    testing::run_on_threads(2, [&](Collectives& collectives) {
      const auto rank = static_cast<size_t>(collectives.world().rank);
      ranks[rank] = trained(*networks[rank], config, &collectives, sequence_parallel);
    });
    for (size_t r = 0; r < 2; ++r) {
      const std::string what = "rank " + std::to_string(r) + (sequence_parallel ? ", tokens split" : "");
      for (int step = 0; step < steps; ++step) {
        EXPECT_NEAR(ranks[r].losses[step], single.losses[step], 1e-5 * single.losses[step]) << what << " step " << step;
      }
      EXPECT_EQ(ranks[r].parameters, (single.parameters - norms) / 2 + norms) << what;
      // AdamW's first steps barely tell a gradient from half of it.
      ASSERT_EQ(ranks[r].norm_grads.size(), single.norm_grads.size());
      for (size_t i = 0; i < single.norm_grads.size(); ++i) {
        const torch::Tensor& g = single.norm_grads[i];
        EXPECT_LE((ranks[r].norm_grads[i] - g).abs().max().item<double>(), 1e-5 * g.abs().max().item<double>())
            << what << ", norm " << i;
      }
    }
  }
}

TEST(TensorParallel, ASplitNamesWhatCannotBeSplit) {
  if (!Collectives::available()) GTEST_SKIP() << "built without Gloo";
  testing::run_on_threads(1, [&](Collectives& collectives) {
    const auto group = tensor_group(collectives, false);
    EXPECT_THROW(testing::planned(testing::tiny_config("mlp-tiny"), "keep").network->split_tensors(group), InputError);
    // gpt-tiny's projections have biases, which a row-parallel split adds once.
    EXPECT_THROW(testing::planned(testing::tiny_config("gpt-tiny"), "keep").network->split_tensors(group), InputError);
  });
}

}  // namespace
}  // namespace papaya::executor
