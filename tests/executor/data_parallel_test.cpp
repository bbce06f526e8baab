// Data parallelism in one process: two ranks on threads over Gloo on
// loopback take the same AdamW steps as one process at the global batch.
#include "executor/distributed/data_parallel.h"

#include <gtest/gtest.h>

#include <thread>

#include "executor/optimizer.h"
#include "tests/executor/moms_fixture.h"

namespace papaya::executor {
namespace {

constexpr int steps = 3;
constexpr int64_t rank_batch = 4;

// `network` trained `steps` AdamW steps at `batch` on `data`, averaging the
// gradients over `collectives`' ranks (if any). Its parameters at the end.
std::vector<torch::Tensor> trained(Network& network, DataSource& data, int64_t batch, Collectives* collectives) {
  const auto parallel = collectives ? std::make_unique<DataParallel>(*collectives, network, 4096) : nullptr;
  if (parallel) parallel->broadcast_parameters();
  const auto optimizer = make_optimizer(network, 1e-3, 0.01);
  for (int step = 0; step < steps; ++step) {
    optimizer->zero_grad();
    network.loss(data.next(batch)).backward();
    if (parallel) parallel->average_gradients();
    optimizer->step();
  }
  std::vector<torch::Tensor> parameters;
  for (const auto& p : network.parameters()) parameters.push_back(p.detach().clone());
  return parameters;
}

// Small buckets (4 KiB), so that the exchange takes several; rank 1 starts
// from other weights, which the broadcast replaces with rank 0's.
TEST(DataParallel, TwoRanksTakeOneProcesssStepsAtTheGlobalBatch) {
  const auto config = testing::tiny_config("llama-tiny");
  auto whole = make_synthetic_data(config, torch::kCPU, 0);
  const auto single = trained(*testing::planned(config, "keep").network, *whole, 2 * rank_batch, nullptr);
  std::vector<std::shared_ptr<Network>> networks{testing::planned(config, "keep").network,
                                                 testing::planned(config, "keep").network};
  {
    const torch::NoGradGuard no_grad;
    for (auto& p : networks[1]->parameters()) p.add_(1.0);
  }
  const int port = executor::free_loopback_port();
  std::vector<std::vector<torch::Tensor>> ranks(2);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      World world;
      world.rank = rank;
      world.size = 2;
      world.master_port = port;
      Collectives collectives(world, std::chrono::seconds(60));
      const auto slice = rank_slice(make_synthetic_data(config, torch::kCPU, 0), world);
      ranks[static_cast<size_t>(rank)] = trained(*networks[static_cast<size_t>(rank)], *slice, rank_batch, &collectives);
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(ranks[0].size(), single.size());
  for (size_t i = 0; i < single.size(); ++i) {
    EXPECT_TRUE(torch::equal(ranks[0][i], ranks[1][i])) << "parameter " << i << " differs between the ranks";
    const double off = (ranks[0][i] - single[i]).norm().item<double>() / single[i].norm().item<double>();
    EXPECT_LT(off, 1e-5) << "parameter " << i;
  }
}

}  // namespace
}  // namespace papaya::executor
