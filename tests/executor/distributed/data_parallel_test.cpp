// Data parallelism in one process: two ranks on threads over Gloo on
// loopback take the same AdamW steps as one process at the global batch.
#include "executor/distributed/data_parallel.h"

#include <gtest/gtest.h>

#include <tuple>

#include "executor/distributed/sharded_data_parallel.h"
#include "executor/distributed/shards.h"

#include "executor/optimizer.h"
#include "tests/executor/distributed/ranks_on_threads.h"
#include "tests/executor/moms_fixture.h"

namespace papaya::executor {
namespace {

constexpr int steps = 3;
constexpr int64_t rank_batch = 4;

struct Trained {
  std::vector<torch::Tensor> parameters;
  std::vector<torch::Tensor> shard;           // what its optimizer stepped (ZeRO), flat
  int64_t optimizer_bytes = 0;                // AdamW's moments
  int buckets = 0, sent_during_backward = 0;  // of the last step's exchange
};

// `network` trained `steps` AdamW steps at `batch` on `data`, averaging the
// gradients over `collectives`' ranks (if any), with the static state
// sharded across them by ZeRO stage `zero`.
Trained trained(Network& network, DataSource& data, int64_t batch, Collectives* collectives, int zero = 0) {
  std::optional<std::vector<torch::Tensor>> shard;
  const std::vector<torch::Tensor> parameters = network.trainable_parameters();
  if (zero >= 1) shard = shard_of(parameters, 2, collectives->world().rank, zero);
  const auto optimizer = make_optimizer(network, 1e-3, 0.01, shard);
  const auto parallel = collectives && zero < 2 ? std::make_unique<DataParallel>(*collectives, parameters, 4096) : nullptr;
  const auto sharded =
      zero >= 2 ? std::make_unique<ShardedDataParallel>(*collectives, network, parameters, *shard, zero, 4096) : nullptr;
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
    // Under ZeRO-3 a weight is gathered as its layer runs.
    out.parameters.push_back(p.storage().nbytes() == 0 ? torch::Tensor() : p.detach().clone());
  }
  if (shard) {
    for (const auto& piece : *shard) out.shard.push_back(piece.detach().clone());
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

// ZeRO-1's shards cut the parameters laid end to end at equal elements,
// through a parameter where a cut falls; a rank's views are its parameters'
// elements and their gradients' (what AdamW steps in place).
TEST(DataParallel, ZeroOneCutsTheParametersEndToEndIntoEqualShards) {
  std::vector<torch::Tensor> parameters{torch::zeros({5}), torch::zeros({3}), torch::zeros({2, 5})};
  std::vector<std::tuple<size_t, int64_t, int64_t, int>> spans;
  for (const ShardSpan& s : shard_spans(parameters, 4)) spans.emplace_back(s.parameter, s.begin, s.numel, s.owner);
  // 18 elements: the ranks start at 0, 4, 9 and 13.
  const std::vector<std::tuple<size_t, int64_t, int64_t, int>> expected{{0, 0, 4, 0}, {0, 4, 1, 1}, {1, 0, 3, 1},
                                                                        {2, 0, 1, 1}, {2, 1, 4, 2}, {2, 5, 5, 3}};
  EXPECT_EQ(spans, expected);
  const auto views = shard_of(parameters, 4, 1, 1);
  ASSERT_EQ(views.size(), 3u);
  const torch::NoGradGuard no_grad;
  for (const auto& v : views) {
    v.fill_(1);
    v.grad().fill_(2);
  }
  EXPECT_TRUE(torch::equal(parameters[0], torch::tensor({0.f, 0.f, 0.f, 0.f, 1.f})));
  EXPECT_TRUE(torch::equal(parameters[1], torch::full({3}, 1.f)));
  EXPECT_EQ(parameters[2].sum().item<float>(), 1);
  EXPECT_EQ(parameters[2].grad()[0][0].item<float>(), 2);
  EXPECT_EQ(parameters[2].grad().sum().item<float>(), 2);
}

// AdamW is elementwise: stepping each shard on its owner and gathering the
// shards is plain data parallelism (within the rounding of two runs whose
// threads share LibTorch's pool), the ranks equal bit for bit, each holding
// its shard's moments only: half, to one element (the shards cut the
// parameters laid end to end, through a parameter where the cut falls).
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
  const auto network = testing::planned(config, "keep").network;
  const int64_t element = 2 * network->parameters().front().element_size();  // both moments of one element
  EXPECT_EQ(sharded[0].optimizer_bytes + sharded[1].optimizer_bytes, plain[0].optimizer_bytes);
  for (size_t r = 0; r < 2; ++r) EXPECT_LE(std::abs(2 * sharded[r].optimizer_bytes - plain[0].optimizer_bytes), 2 * element) << r;
}

// ZeRO-2 and ZeRO-3: each rank reduces and steps its shard; the gradients
// are the same means, so the steps are plain data parallelism's (within the
// rounding of two runs whose threads share LibTorch's pool): the two ranks'
// shards end to end are its weights. Under ZeRO-2 each rank then holds every
// weight, under ZeRO-3 none between steps (each gathered as its layer runs).
// Tiny buckets (4 KiB): several in flight.
TEST(DataParallel, ZeroTwoAndThreeTakePlainDataParallelismsSteps) {
  if (!Collectives::available()) GTEST_SKIP() << "built without Gloo";
  for (const char* name : {"llama-tiny", "gpt-tiny"}) {
    const auto config = testing::tiny_config(name);
    const auto plain = two_ranks(config, 0);
    for (const int zero : {2, 3}) {
      const auto sharded = two_ranks(config, zero);
      std::vector<torch::Tensor> pieces = sharded[0].shard;
      pieces.insert(pieces.end(), sharded[1].shard.begin(), sharded[1].shard.end());
      const torch::Tensor both = torch::cat(pieces);
      int64_t at = 0;
      for (size_t i = 0; i < plain[0].parameters.size(); ++i) {
        const torch::Tensor& expected = plain[0].parameters[i];
        const torch::Tensor stepped = both.narrow(0, at, expected.numel()).view_as(expected);
        at += expected.numel();
        const auto off = [&](const torch::Tensor& t) {
          return (t - expected).norm().item<double>() / expected.norm().item<double>();
        };
        EXPECT_LT(off(stepped), 1e-5) << name << " --zero " << zero << " parameter " << i;
        for (size_t r = 0; r < 2; ++r) {
          const torch::Tensor& held = sharded[r].parameters[i];
          EXPECT_EQ(held.defined(), zero == 2) << name << " --zero " << zero << " rank " << r << " parameter " << i;
          if (held.defined()) EXPECT_LT(off(held), 1e-5) << name << " --zero " << zero << " rank " << r << " parameter " << i;
        }
      }
      EXPECT_EQ(at, both.numel()) << name;
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
