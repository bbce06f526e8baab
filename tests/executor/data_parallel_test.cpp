// Data parallelism in one process: two ranks on threads over Gloo on
// loopback take the same AdamW steps as one process at the global batch.
#include "executor/distributed/data_parallel.h"

#include <gtest/gtest.h>

#include "executor/distributed/sharded_data_parallel.h"

#include "executor/optimizer.h"
#include "tests/executor/moms_fixture.h"
#include "tests/executor/ranks_on_threads.h"

namespace papaya::executor {
namespace {

constexpr int steps = 3;
constexpr int64_t rank_batch = 4;

struct Trained {
  std::vector<torch::Tensor> parameters;
  int64_t optimizer_bytes = 0;                // AdamW's moments
  int buckets = 0, sent_during_backward = 0;  // of the last step's exchange
};

// `network` trained `steps` AdamW steps at `batch` on `data`, averaging the
// gradients over `collectives`' ranks (if any), with the static state
// sharded across them by ZeRO stage `zero`.
Trained trained(Network& network, DataSource& data, int64_t batch, Collectives* collectives, int zero = 0) {
  const auto optimizer = make_optimizer(
      network, 1e-3, 0.01,
      zero >= 1 ? std::optional(shards(network.trainable_parameters(), 2)[static_cast<size_t>(collectives->world().rank)]) : std::nullopt);
  const auto parallel = collectives && zero < 2 ? std::make_unique<DataParallel>(*collectives, network.trainable_parameters(), 4096) : nullptr;
  const auto sharded = zero >= 2 ? std::make_unique<ShardedDataParallel>(*collectives, network, zero, 4096) : nullptr;
  if (parallel) parallel->broadcast_parameters();
  if (sharded) sharded->broadcast_parameters();
  for (int step = 0; step < steps; ++step) {
    if (!sharded) network.zero_grad();  // every gradient: a ZeRO-1 optimizer holds its shard's only
    if (sharded) sharded->begin_step();
    network.loss(data.next(batch)).backward();
    if (parallel) parallel->average_gradients();
    if (sharded) sharded->reduce_gradients();
    optimizer->step();
    if (zero == 1) parallel->gather_shards();
    if (sharded) sharded->gather_shards();
  }
  Trained out;
  if (parallel) {
    out.buckets = parallel->bucket_count();
    out.sent_during_backward = parallel->sent_during_backward();
  }
  for (const auto& p : network.parameters()) {
    // Under ZeRO-3 a weight another rank owns is gathered from it.
    if (sharded && p.storage().nbytes() == 0) {
      out.parameters.push_back(torch::Tensor());
      continue;
    }
    out.parameters.push_back(p.detach().clone());
  }
  for (const auto& [key, state] : optimizer->state()) {
    const auto& s = static_cast<const torch::optim::AdamWParamState&>(*state);
    out.optimizer_bytes += static_cast<int64_t>(s.exp_avg().nbytes() + s.exp_avg_sq().nbytes());
  }
  return out;
}

// Two ranks on threads, rank 1 starting from other weights (the broadcast
// replaces them with rank 0's); small buckets (4 KiB), so that the exchange
// takes several, sent off during backward.
std::vector<Trained> two_ranks(const model::NetworkConfig& config, int zero) {
  std::vector<std::shared_ptr<Network>> networks{testing::planned(config, "keep").network,
                                                 testing::planned(config, "keep").network};
  {
    const torch::NoGradGuard no_grad;
    for (auto& p : networks[1]->parameters()) p.add_(1.0);
  }
  std::vector<Trained> ranks(2);
  testing::run_on_threads(2, [&](Collectives& collectives) {
    const auto rank = static_cast<size_t>(collectives.world().rank);
    const auto slice = rank_slice(make_synthetic_data(config, torch::kCPU, 0), collectives.world());
    ranks[rank] = trained(*networks[rank], *slice, rank_batch, &collectives, zero);
  });
  return ranks;
}

TEST(DataParallel, TwoRanksTakeOneProcesssStepsAtTheGlobalBatch) {
  if (!Collectives::available()) GTEST_SKIP() << "built without Gloo";
  const auto config = testing::tiny_config("llama-tiny");
  auto whole = make_synthetic_data(config, torch::kCPU, 0);
  const Trained single = trained(*testing::planned(config, "keep").network, *whole, 2 * rank_batch, nullptr);
  const auto ranks = two_ranks(config, 0);
  // After the first step, every bucket left while backward still ran.
  EXPECT_GT(ranks[0].buckets, 2);
  EXPECT_EQ(ranks[0].sent_during_backward, ranks[0].buckets);
  ASSERT_EQ(ranks[0].parameters.size(), single.parameters.size());
  for (size_t i = 0; i < single.parameters.size(); ++i) {
    EXPECT_TRUE(torch::equal(ranks[0].parameters[i], ranks[1].parameters[i]))
        << "parameter " << i << " differs between the ranks";
    const double off =
        (ranks[0].parameters[i] - single.parameters[i]).norm().item<double>() / single.parameters[i].norm().item<double>();
    EXPECT_LT(off, 1e-5) << "parameter " << i;
  }
}

// AdamW is elementwise: stepping each shard on its owner and gathering the
// shards is plain data parallelism (within the rounding of two runs whose
// threads share LibTorch's pool), the ranks equal bit for bit, each holding
// its shard's moments only (about half, to within one parameter).
TEST(DataParallel, ZeroOneIsPlainDataParallelismWithHalfTheOptimizerState) {
  if (!Collectives::available()) GTEST_SKIP() << "built without Gloo";
  const auto config = testing::tiny_config("llama-tiny");
  const auto plain = two_ranks(config, 0), sharded = two_ranks(config, 1);
  for (size_t i = 0; i < plain[0].parameters.size(); ++i) {
    EXPECT_TRUE(torch::equal(sharded[0].parameters[i], sharded[1].parameters[i])) << "parameter " << i;
    const double off =
        (sharded[0].parameters[i] - plain[0].parameters[i]).norm().item<double>() / plain[0].parameters[i].norm().item<double>();
    EXPECT_LT(off, 1e-5) << "parameter " << i;
  }
  int64_t largest = 0;
  for (const auto& p : testing::planned(config, "keep").network->parameters()) {
    largest = std::max<int64_t>(largest, 2 * static_cast<int64_t>(p.nbytes()));
  }
  EXPECT_EQ(sharded[0].optimizer_bytes + sharded[1].optimizer_bytes, plain[0].optimizer_bytes);
  for (size_t r = 0; r < 2; ++r) EXPECT_LE(std::abs(2 * sharded[r].optimizer_bytes - plain[0].optimizer_bytes), 2 * largest) << r;
}

// ZeRO-2 and ZeRO-3: each rank reduces and steps its shard; the gradients
// are the same means, so the steps are plain data parallelism's (within the
// rounding of two runs whose threads share LibTorch's pool), and under
// ZeRO-3 each rank holds only its own weights between steps, the others'
// gathered as each layer runs. Tiny buckets (4 KiB): several in flight.
TEST(DataParallel, ZeroTwoAndThreeTakePlainDataParallelismsSteps) {
  if (!Collectives::available()) GTEST_SKIP() << "built without Gloo";
  for (const char* name : {"llama-tiny", "gpt-tiny"}) {
    const auto config = testing::tiny_config(name);
    const auto plain = two_ranks(config, 0);
    for (const int zero : {2, 3}) {
      const auto sharded = two_ranks(config, zero);
      size_t held = 0;
      for (size_t i = 0; i < plain[0].parameters.size(); ++i) {
        for (size_t r = 0; r < 2; ++r) {
          const torch::Tensor& mine = sharded[r].parameters[i];
          if (!mine.defined()) continue;
          ++held;
          const double off = (mine - plain[0].parameters[i]).norm().item<double>() / plain[0].parameters[i].norm().item<double>();
          EXPECT_LT(off, 1e-5) << name << " --zero " << zero << " rank " << r << " parameter " << i;
        }
      }
      // ZeRO-2: both ranks hold every weight; ZeRO-3: each weight on one rank (with a tied head's, any left whole too).
      if (zero == 2) EXPECT_EQ(held, 2 * plain[0].parameters.size()) << name;
      if (zero == 3) EXPECT_LT(held, 2 * plain[0].parameters.size()) << name;
      EXPECT_GE(held, plain[0].parameters.size()) << name;
    }
  }
}

// NCCL, on the one GPU a device machine has: a job of one rank on cuda:0
// joins, sums and broadcasts in place, and averaging over it leaves the
// gradients as backward made them.
TEST(DataParallel, OneRankOverNcclOnAGpu) {
  if (!Collectives::nccl_available() || !torch::cuda::is_available()) GTEST_SKIP() << "no NCCL build or no CUDA device";
  World world;
  world.master_port = free_loopback_port();
  Collectives collectives(world, std::chrono::seconds(60), torch::Device(torch::kCUDA, 0));
  std::vector<torch::Tensor> t{torch::arange(8, torch::dtype(torch::kFloat).device(torch::kCUDA))};
  collectives.allreduce_sum(t);
  collectives.broadcast(t, 0);
  EXPECT_TRUE(torch::equal(t[0].cpu(), torch::arange(8, torch::kFloat)));
  const auto config = testing::tiny_config("llama-tiny");
  auto network = testing::planned(config, "keep").network;
  network->to(torch::kCUDA);
  DataParallel parallel(collectives, network->trainable_parameters(), 4096);
  network->loss(make_synthetic_data(config, torch::kCUDA, 0)->next(rank_batch)).backward();
  std::vector<torch::Tensor> before;
  for (const auto& p : network->parameters()) before.push_back(p.grad().clone());
  parallel.average_gradients();
  const auto after = network->parameters();
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(torch::equal(after[i].grad(), before[i])) << i;
  EXPECT_DOUBLE_EQ(collectives.mean(2.5), 2.5);
}

}  // namespace
}  // namespace papaya::executor
