// `papaya train --nproc`: ranks on loopback that train as one process does at
// the global batch, and a job that ends with exit 2, never hangs, when a rank
// does not come or is killed.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "executor/distributed/world.h"
#include "model/parallel/sharding.h"
#include "tests/cli/rank_checks.h"
#include "tests/cli/run_papaya.h"

namespace papaya::testing {
namespace {

using nlohmann::json;

// Networks without dropout: each rank's masks would be drawn apart. A plan
// of memory optimizations trains under it as under one process.
TEST(DataParallel, TwoRanksTrainAsOneProcessAtTheGlobalBatch) {
  if (!built_with_gloo()) GTEST_SKIP() << "built without Gloo";
  for (const auto& [network, plan] :
       {std::pair{"llama-tiny", "keep"}, std::pair{"mlp-tiny", "keep"}, std::pair{"llama-tiny", "recompute-all+invert"}}) {
    const std::string common = std::string("train --network ") + network + " --plan " + plan + " --steps 4 --json";
    const Outcome one = run_papaya(common + " --batch 8");
    const Outcome two = run_papaya(common + " --batch 4 --nproc 2 --timeout 60");
    ASSERT_EQ(one.code, 0) << one.err;
    ASSERT_EQ(two.code, 0) << two.err;
    const json a = json::parse(one.out), b = json::parse(two.out);
    EXPECT_EQ(b["world_size"], 2);
    EXPECT_EQ(b["global_batch"], 8);
    ASSERT_EQ(b["ranks"].size(), 2u);
    EXPECT_EQ(b["ranks"][0]["static_bytes"], b["ranks"][1]["static_bytes"]);
    EXPECT_GT(b["global_samples_per_s"].get<double>(), 0);
    ASSERT_EQ(a["losses"].size(), b["losses"].size());
    for (size_t i = 0; i < a["losses"].size(); ++i) {
      const double single = a["losses"][i], parallel = b["losses"][i];
      EXPECT_NEAR(parallel, single, 1e-5 * std::abs(single)) << network << " " << plan << " step " << i + 1;
    }
  }
}

// ZeRO-1, 2 and 3 take plain data parallelism's steps with the static state
// split; each rank's static bytes are what the model's sharding says
// (model/parallel/sharding.h): plain, 16 bytes a parameter on each; ZeRO-1
// the 8 of AdamW's moments split between the two, ZeRO-2 the gradients'
// 4 too, ZeRO-3 the weights' 4 too (exactly in sum; per rank to one
// element's, as the shards cut the parameters laid end to end). Each rank's
// peak is what `predict --gpus 2 --zero Z` says from a profile of one
// process: as near as one process's prediction comes, beyond the model's
// exchange buffers (a copy of the gradients; two buckets) and, under ZeRO-3,
// the two layers' weights it has gathered whole.
TEST(DataParallel, ZeroStagesTrainAsPlainDataParallelismWithTheModelsMemory) {
  if (!built_with_gloo()) GTEST_SKIP() << "built without Gloo";
  const std::string run = "train --network llama-tiny --batch 4 --steps 4 --nproc 2 --timeout 60 --json";
  const Outcome alone = run_papaya("train --network llama-tiny --batch 4 --steps 4 --json");
  ASSERT_EQ(alone.code, 0) << alone.err;
  const json single = json::parse(alone.out);
  std::vector<json> stages;
  for (int zero = 0; zero <= 3; ++zero) {
    const Outcome ranks = run_papaya(run + " --zero " + std::to_string(zero));
    ASSERT_EQ(ranks.code, 0) << "--zero " << zero << ": " << ranks.err;
    stages.push_back(json::parse(ranks.out));
    EXPECT_EQ(stages.back()["zero"], zero);
  }
  const json& plain = stages[0];
  for (int zero = 1; zero <= 3; ++zero) expect_losses_of_one_process(stages[zero], plain, "--zero " + std::to_string(zero));
  const double parameters = plain["parameters"];
  const model::RankStatic whole = model::whole_static(4 * parameters, 4 * parameters, 16 * parameters);  // fp32 AdamW
  for (const auto& rank : plain["ranks"]) EXPECT_EQ(rank["static_bytes"].get<double>(), model::shard(whole, 2, 0).total());
  for (int zero = 1; zero <= 3; ++zero) {
    const double part0 = stages[zero]["ranks"][0]["static_bytes"], part1 = stages[zero]["ranks"][1]["static_bytes"];
    EXPECT_EQ(part0 + part1, 2 * model::shard(whole, 2, zero).total()) << "--zero " << zero;
    for (const double part : {part0, part1}) EXPECT_NEAR(part, model::shard(whole, 2, zero).total(), 16) << "--zero " << zero;
  }
  // predict --gpus 2 from a profile of one process.
  const TempDir dir("papaya-dp-predict");
  const std::string model_file = profiled_model(dir, "llama-tiny");
  ASSERT_FALSE(::testing::Test::HasFailure());
  const auto predicted = [&](const std::string& extra) {
    const Outcome run = run_papaya("predict " + model_file + " --batch 4 --plan keep --json" + extra);
    EXPECT_EQ(run.code, 0) << run.err;
    return json::parse(run.out).at(0)["peak_bytes"].get<double>();
  };
  const auto on_two = [&](int zero) { return predicted(" --gpus 2 --link ethernet-10g --zero " + std::to_string(zero)); };
  const double off_alone = std::abs(predicted("") - single["peak_bytes"].get<double>());
  // Beyond the model's buffers, only the collectives' scalars.
  const double slack = 0.01 * model::exchange_buffer_bytes(whole, 2, 0, 25 << 20, model::StateHolding::measured);
  for (int zero = 0; zero <= 3; ++zero) {
    const double peak = on_two(zero);
    for (const auto& rank : stages[zero]["ranks"]) {
      const double measured = rank["peak_bytes"];
      EXPECT_LT(std::abs(peak - measured), 0.03 * measured) << "--zero " << zero;
      EXPECT_LE(measured, peak + off_alone + slack) << "--zero " << zero;
      EXPECT_GE(measured, peak - off_alone - slack) << "--zero " << zero;
    }
  }
  // A plan of memory optimizations composes with the sharding: ZeRO-3 under quantize-4.
  const Outcome quantized = run_papaya(run + " --zero 3 --plan quantize-4");
  ASSERT_EQ(quantized.code, 0) << quantized.err;
  const Outcome predicted_quantized =
      run_papaya("predict " + model_file + " --batch 4 --plan quantize-4 --json --gpus 2 --link ethernet-10g --zero 3");
  ASSERT_EQ(predicted_quantized.code, 0) << predicted_quantized.err;
  const double quantized_peak = json::parse(predicted_quantized.out).at(0)["peak_bytes"];
  const json quantized_ranks = json::parse(quantized.out);
  for (const auto& rank : quantized_ranks["ranks"]) {
    EXPECT_LT(std::abs(quantized_peak - rank["peak_bytes"].get<double>()), 0.03 * rank["peak_bytes"].get<double>());
  }
  expect_input_error("train --network llama-tiny --zero 1", "--nproc");
  expect_input_error("train --network llama-tiny --nproc 2 --zero 2 --save /tmp/never.state",
                     "saving the training state under ZeRO stage 2");
  expect_input_error("train --network llama-tiny --nproc 2 --zero 4", "--zero");
}

// In bf16 a layer computes with half-type copies of its weights, which one
// process's autograd holds from forward to backward. Under ZeRO-3 the
// weights are gathered again for backward and cast again there, as FSDP
// gathers them: no copy is held between the passes. Each rank's peak is
// what `predict --gpus 2 --zero 3` says from a bf16 profile of one process
// (which held them), within 3 %, and the losses are the plain ranks' (the
// first step's to the bit; then within bf16's rounding: the Function's
// backward rounds its products as autograd's does, not in the same order).
TEST(DataParallel, ZeroThreeHoldsNoHalfTypeCopiesOfTheWeights) {
  if (!built_with_gloo()) GTEST_SKIP() << "built without Gloo";
  const TempDir dir("papaya-dp-bf16");
  const Outcome profiled = run_papaya("profile --network llama-tiny --precision bf16 --batch 1,2,4 --out " + dir.path("p.json"));
  ASSERT_EQ(profiled.code, 0) << profiled.err;
  const Outcome fitted = run_papaya("fit " + dir.path("p.json") + " --out " + dir.path("m.json"));
  ASSERT_EQ(fitted.code, 0) << fitted.err;
  const std::string run = "train --network llama-tiny --precision bf16 --batch 4 --steps 3 --nproc 2 --timeout 60 --json --zero ";
  const Outcome plain = run_papaya(run + "0"), sharded = run_papaya(run + "3");
  ASSERT_EQ(plain.code, 0) << plain.err;
  ASSERT_EQ(sharded.code, 0) << sharded.err;
  const json ranks = json::parse(sharded.out), plain_ranks = json::parse(plain.out);
  ASSERT_EQ(ranks["losses"].size(), plain_ranks["losses"].size());
  EXPECT_EQ(ranks["losses"][0], plain_ranks["losses"][0]);
  for (size_t i = 1; i < ranks["losses"].size(); ++i) {
    const double loss = plain_ranks["losses"][i];
    EXPECT_NEAR(ranks["losses"][i].get<double>(), loss, std::ldexp(1.0, -8) * loss) << "step " << i;
  }
  const Outcome predicted =
      run_papaya("predict " + dir.path("m.json") + " --batch 4 --plan keep --json --gpus 2 --link ethernet-10g --zero 3");
  ASSERT_EQ(predicted.code, 0) << predicted.err;
  const double peak = json::parse(predicted.out).at(0)["peak_bytes"];
  for (const auto& rank : ranks["ranks"]) expect_peak_near_model(rank["peak_bytes"].get<double>(), peak, "--zero 3 in bf16");
}

TEST(DataParallel, ARankThatNeverComesFailsTheJoin) {
  if (!built_with_gloo()) GTEST_SKIP() << "built without Gloo";
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "2", 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", std::to_string(executor::free_loopback_port()).c_str(), 1);
  const auto start = std::chrono::steady_clock::now();
  const Outcome run = run_papaya("train --network mlp-tiny --steps 2 --timeout 3");
  for (const char* name : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) unsetenv(name);
  EXPECT_EQ(run.code, 2) << run.err;
  EXPECT_NE(run.err.find("joining the job"), std::string::npos) << run.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
}

// The processes with `marker` among their arguments: the launcher and its
// ranks, with their RANK (-1: none).
std::vector<std::pair<pid_t, int>> processes_with(const std::string& marker) {
  std::vector<std::pair<pid_t, int>> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmdline(entry.path() / "cmdline"), environ(entry.path() / "environ");
    const std::string arguments((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    if (arguments.find(marker) == std::string::npos || arguments.find("papaya") == std::string::npos) continue;
    const std::string variables((std::istreambuf_iterator<char>(environ)), std::istreambuf_iterator<char>());
    std::istringstream entries(variables);
    int rank = -1;
    for (std::string variable; std::getline(entries, variable, '\0');) {
      if (variable.rfind("RANK=", 0) == 0) rank = std::stoi(variable.substr(5));
    }
    found.emplace_back(static_cast<pid_t>(std::stoi(name)), rank);
  }
  return found;
}

// A rank killed mid-training ends the job: the launcher ends the other rank
// and exits 2 naming the one that died.
TEST(DataParallel, AKilledRankEndsTheJob) {
  if (!built_with_gloo()) GTEST_SKIP() << "built without Gloo";
  const std::string marker = "3141592";  // the seed; /proc's cmdline separates arguments by NULs
  auto job = std::async(std::launch::async, [&] {
    return run_papaya("train --network mlp-tiny --batch 4 --steps 1000000 --nproc 2 --timeout 20 --seed " + marker);
  });
  pid_t victim = 0;
  for (int tries = 0; tries < 600 && !victim; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (const auto& [pid, rank] : processes_with(marker)) victim = rank == 1 ? pid : victim;
  }
  if (victim) {
    std::this_thread::sleep_for(std::chrono::seconds(2));  // into training
    kill(victim, SIGKILL);
  }
  const bool ended = job.wait_for(std::chrono::seconds(90)) == std::future_status::ready;
  for (const auto& [pid, rank] : processes_with(marker)) kill(pid, SIGKILL);  // never leave a job behind
  ASSERT_NE(victim, 0) << "rank 1 never started";
  ASSERT_TRUE(ended) << "the job hangs";
  const Outcome run = job.get();
  EXPECT_EQ(run.code, 2) << run.err;
  EXPECT_NE(run.err.find("rank 1 was killed by signal 9"), std::string::npos) << run.err;
}

// The link between two ranks here: every size timed, a positive latency and
// bandwidth fitted (how well a loopback follows a line is this machine's).
TEST(DataParallel, ProfileCommFitsTheLinkBetweenRanks) {
  if (!built_with_gloo()) GTEST_SKIP() << "built without Gloo";
  const TempDir dir("papaya-comm");
  const Outcome run = run_papaya("profile --comm --nproc 2 --timeout 60 --json --out " + dir.path("link.json"));
  ASSERT_EQ(run.code, 0) << run.err;
  const json doc = json::parse(run.out);
  // The link file it writes is what --link takes: its figures are the fit's.
  const json link = json::parse(std::ifstream(dir.path("link.json")));
  EXPECT_NEAR(link["bandwidth_gbs"].get<double>() * 1e9, doc["bytes_per_s"].get<double>(),
              1e-6 * doc["bytes_per_s"].get<double>());
  EXPECT_EQ(link["measured"]["samples"].size(), 8u);
  EXPECT_EQ(doc["ranks"], 2);
  ASSERT_EQ(doc["samples"].size(), 8u);  // 4 KiB to 64 MiB
  for (const auto& s : doc["samples"]) EXPECT_GT(s["seconds"].get<double>(), 0) << s.dump();
  EXPECT_GT(doc["bytes_per_s"].get<double>(), 0);
  EXPECT_GE(doc["latency_s"].get<double>(), 0);
  EXPECT_TRUE(doc.contains("r2"));
  expect_input_error("profile --comm --nproc 1", "--nproc");
  expect_input_error("profile --network gpt-tiny", "--out");
}

TEST(DataParallel, BadRequestsFailBeforeAnyRankStarts) {
  expect_input_error("train --nproc 2 --plan auto", "recommend --gpus");
  expect_input_error("train --nproc 2 --network no-such-net", "no-such-net");
  expect_input_error("train --nproc 2 --device cuda", "cuda");  // a CPU build, or no NCCL, or too few GPUs
}

}  // namespace
}  // namespace papaya::testing
