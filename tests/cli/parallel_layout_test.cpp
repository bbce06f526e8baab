// `papaya recommend/plan --gpus N --gpus-per-node G`: a transformer laid out
// over many GPUs, the best layouts within each GPU's memory, handed to
// Megatron-LM, torchtitan and papaya's own trainer; impossible splits exit 2
// naming why.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "executor/distributed/world.h"
#include "model/json_file.h"
#include "tests/cli/rank_checks.h"
#include "tests/cli/run_papaya.h"

namespace papaya::testing {
namespace {

using nlohmann::json;

// llama-tiny laid out, the model it profiles written into `dir` (not the
// current folder).
std::string recommend(const TempDir& dir) {
  return "recommend --network llama-tiny --hardware H100-SXM-80GB --precision bf16 --out " + dir.path("plan.json") + " ";
}

TEST(Layouts, RecommendLaysATransformerOutOverGpus) {
  const TempDir dir("papaya-layouts");
  const Outcome run = run_papaya(recommend(dir) + "--gpus 8 --gpus-per-node 4 --global-batch 32 --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json doc = json::parse(run.out);
  EXPECT_EQ(doc["gpus"], 8);
  EXPECT_EQ(doc["intra_node_link"], "NVLink-4");
  EXPECT_EQ(doc["inter_node_link"], "InfiniBand-NDR");
  ASSERT_FALSE(doc["layouts"].empty());
  double previous = 1e300;
  for (const json& l : doc["layouts"]) {
    EXPECT_EQ(l["tensor"].get<int>() * l["pipeline"].get<int>() * l["context"].get<int>() * l["data"].get<int>(), 8);
    EXPECT_EQ(l["global_batch"], 32);
    EXPECT_LE(l["peak_bytes"].get<double>(), doc["budget_bytes"].get<double>());
    EXPECT_LE(l["tokens_per_s"].get<double>(), previous);
    previous = l["tokens_per_s"];
    EXPECT_EQ(l["stages"].size(), l["pipeline"].get<size_t>());
    EXPECT_GT(l["mfu"].get<double>(), 0);
  }
  const Outcome text = run_papaya(recommend(dir) + "--gpus 8 --gpus-per-node 4 --global-batch 32 --tp 2 --pp 2");
  ASSERT_EQ(text.code, 0) << text.err;
  for (const char* part : {"t2s p2", "best:", "searched:", "tokens/s", "MFU"}) {
    EXPECT_NE(text.out.find(part), std::string::npos) << part << " in\n" << text.out;
  }
}

TEST(Layouts, LimitsGivesTheBestLayoutOnEachGpu) {
  const Outcome run =
      run_papaya("limits --network llama-tiny --hardware H100-SXM-80GB,T4 --gpus 8 --gpus-per-node 4 --global-batch 32 --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json doc = json::parse(run.out);
  ASSERT_EQ(doc.size(), 2u);
  EXPECT_EQ(doc[0]["hardware"], "H100-SXM-80GB");
  EXPECT_EQ(doc[1]["hardware"], "T4");
  for (const json& entry : doc) {
    ASSERT_FALSE(entry["best"].is_null()) << entry.dump();
    const json& l = entry["best"];
    EXPECT_EQ(l["tensor"].get<int>() * l["pipeline"].get<int>() * l["context"].get<int>() * l["data"].get<int>(), 8);
    EXPECT_LE(l["peak_bytes"].get<double>(), entry["budget_bytes"].get<double>());
  }
  // Where nothing fits, the row says what the nearest needs; --emit is for one layout.
  const Outcome tight = run_papaya("limits --network llama-tiny --hardware T4 --gpus 8 --gpus-per-node 4 --budget 1KiB");
  ASSERT_EQ(tight.code, 0) << tight.err;
  EXPECT_NE(tight.out.find("none fits"), std::string::npos) << tight.out;
  const Outcome emit = run_papaya("limits --network llama-tiny --hardware T4 --gpus 8 --emit megatron");
  EXPECT_EQ(emit.code, 2);
  EXPECT_NE(emit.err.find("--emit writes one layout"), std::string::npos) << emit.err;
}

// --tokens and --price: the time of the tokens at each hardware's best
// layout's tokens/s, their cost at each GPU-hour's price times the GPUs, and
// the fastest and the cheapest named.
TEST(Layouts, LimitsPricesTheTokensOnEachGpu) {
  const std::string asked =
      "limits --network llama-tiny --hardware H100-SXM-80GB,t4 --gpus 8 --gpus-per-node 4 --global-batch 32 "
      "--tokens 2e9 --price H100-SXM-80GB=3.5 --price T4=0.25";
  const Outcome run = run_papaya(asked + " --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json doc = json::parse(run.out);
  ASSERT_EQ(doc.size(), 2u);
  const std::vector<double> prices{3.5, 0.25};
  std::vector<double> seconds, costs;
  for (size_t i = 0; i < doc.size(); ++i) {
    const json& t = doc[i]["training"];
    ASSERT_FALSE(doc[i]["best"].is_null()) << doc[i].dump();
    EXPECT_EQ(t["tokens"], 2e9);
    EXPECT_EQ(t["usd_per_gpu_hour"], prices[i]);
    seconds.push_back(t["seconds"]);
    costs.push_back(t["cost_usd"]);
    EXPECT_NEAR(seconds.back(), 2e9 / doc[i]["best"]["tokens_per_s"].get<double>(), 1e-9 * seconds.back());
    EXPECT_NEAR(costs.back(), prices[i] * 8 * seconds.back() / 3600, 1e-9 * costs.back());
  }
  for (size_t i = 0; i < doc.size(); ++i) {
    EXPECT_EQ(doc[i]["training"]["fastest"], seconds[i] == std::min(seconds[0], seconds[1])) << i;
    EXPECT_EQ(doc[i]["training"]["cheapest"], costs[i] == std::min(costs[0], costs[1])) << i;
  }
  const Outcome text = run_papaya(asked);
  ASSERT_EQ(text.code, 0) << text.err;
  for (const char* part : {"time for 2B tokens", "cost", "fastest: ", "cheapest: ", "$"}) {
    EXPECT_NE(text.out.find(part), std::string::npos) << part << " in\n" << text.out;
  }
  // Prices of what is not asked about, or that are no price, are refused.
  for (const auto& [options, message] : std::vector<std::pair<std::string, std::string>>{
           {"--price T4=1", "--price prices --tokens"},
           {"--tokens 1e9 --price A100-80GB=2", "A100-80GB is not among --hardware T4"},
           {"--tokens 1e9 --price T4=free", "must be a number of US dollars above 0"},
           {"--tokens 1e9 --price T4=0", "must be a number of US dollars above 0"},
           {"--tokens 1e9 --price T4", "expected NAME=USD_PER_GPU_HOUR"},
           {"--tokens 1e9 --price T4=1 --price t4=2", "T4 priced twice"},
           {"--tokens 0", "--tokens"},
       }) {
    expect_input_error("limits m.json --hardware T4 " + options, message);
  }
}

// Where nothing fits one GPU, the strategies that fit nowhere are counted,
// not listed as rows of "-", and the fewest GPUs a layout fits is said.
TEST(Layouts, LimitsSaysHowManyGpusANetworkTooLargeForOneNeeds) {
  const Outcome run = run_papaya("limits --network llama-tiny --hardware T4 --budget 200KiB --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json doc = json::parse(run.out);
  ASSERT_FALSE(doc.empty());
  for (const json& cell : doc) EXPECT_EQ(cell["max_batch"], 0) << cell.dump();
  const json& fewest = doc[0]["fewest_gpus_that_fit"];
  ASSERT_TRUE(fewest.contains("gpus")) << fewest.dump();
  EXPECT_GT(fewest["gpus"].get<int>(), 1);
  EXPECT_LE(fewest["peak_bytes"].get<double>(), 200.0 * 1024);
  // Half as many GPUs fit no layout.
  const int half = fewest["gpus"].get<int>() / 2;
  const Outcome fewer = run_papaya("limits --network llama-tiny --hardware T4 --budget 200KiB --gpus " + std::to_string(half) +
                                   " --gpus-per-node " + std::to_string(std::min(half, 8)) + " --json");
  ASSERT_EQ(fewer.code, 0) << fewer.err;
  EXPECT_TRUE(json::parse(fewer.out)[0]["best"].is_null()) << fewer.out;
  const Outcome text = run_papaya("limits --network llama-tiny --hardware T4 --budget 200KiB");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("no strategy fits on any of them"), std::string::npos) << text.out;
  // The count is a matter of bytes, the same from one profile to another; which layout of that
  // many GPUs is fastest is timed, so it may differ between the two runs.
  EXPECT_NE(text.out.find("the fewest that fit: " + fewest["gpus"].dump() + ", laid out "), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("keep "), std::string::npos) << "no row of '-':\n" << text.out;
  // Fine-tuned instead: where one GPU holds the network with LoRA but not trained whole, the
  // largest batch of the strategy suggested is what `limits --lora 16` itself says (bytes are
  // exact from one profile to another; which strategy is fastest is timed, so not compared).
  const std::string within = "limits --network llama-tiny --hardware T4 --budget 1200KiB --json";
  const Outcome whole = run_papaya(within);
  ASSERT_EQ(whole.code, 0) << whole.err;
  const json lora = json::parse(whole.out)[0]["fine_tuned_instead"][0];
  ASSERT_EQ(lora["lora_rank"], 16) << lora.dump();
  ASSERT_GT(lora["max_batch"].get<int>(), 0) << lora.dump();
  const Outcome adapted = run_papaya(within + " --lora 16");
  ASSERT_EQ(adapted.code, 0) << adapted.err;
  size_t compared = 0;
  for (const json& cell : json::parse(adapted.out)) {
    EXPECT_TRUE(cell["fine_tuned_instead"].empty()) << "nothing suggested once fine-tuning is asked for";
    if (cell["strategy"] != lora["strategy"]) continue;
    EXPECT_EQ(cell["max_batch"], lora["max_batch"]) << cell.dump();
    ++compared;
  }
  EXPECT_EQ(compared, 1u);
  // Fine-tuned networks are laid out too: a LoRA base's frozen projections save no input.
  const Outcome adapted_layout = run_papaya("limits --network llama-tiny --lora 16 --hardware T4 --budget 200KiB --json");
  ASSERT_EQ(adapted_layout.code, 0) << adapted_layout.err;
  const json adapted_fewest = json::parse(adapted_layout.out)[0]["fewest_gpus_that_fit"];
  ASSERT_TRUE(adapted_fewest.contains("gpus")) << adapted_fewest.dump();
  EXPECT_LE(adapted_fewest["peak_bytes"].get<double>(), 200.0 * 1024);
  // A fine-tuning whose weights and adapters' state alone pass the budget is not profiled, and says why.
  const Outcome qlora =
      run_papaya("limits --network llama-tiny --lora 16 --base-weights nf4 --hardware T4 --budget 200KiB --json");
  ASSERT_EQ(qlora.code, 0) << qlora.err;
  const double qlora_state = json::parse(qlora.out)[0]["static_bytes"].get<double>();
  const std::string below = std::to_string(static_cast<int64_t>(qlora_state / 2));
  const Outcome neither = run_papaya("limits --network llama-tiny --hardware T4 --budget " + below + " --json");
  ASSERT_EQ(neither.code, 0) << neither.err;
  const json tuned = json::parse(neither.out)[0]["fine_tuned_instead"];
  ASSERT_EQ(tuned.size(), 2u) << tuned.dump();
  for (const json& t : tuned) {
    EXPECT_EQ(t["max_batch"], 0) << t.dump();
    EXPECT_NE(t.value("why_none", "").find("alone take"), std::string::npos) << t.dump();
  }
  // A network that is no transformer is laid out over no GPUs: said so, not searched in vain.
  const Outcome mlp = run_papaya("limits --network mlp-tiny --hardware T4 --budget 10KiB");
  ASSERT_EQ(mlp.code, 0) << mlp.err;
  EXPECT_NE(mlp.out.find("papaya lays out only a transformer over more GPUs"), std::string::npos) << mlp.out;
}

TEST(Layouts, EmitWritesTheBestLayoutForEachEngine) {
  const TempDir dir("papaya-layouts");
  const Outcome megatron = run_papaya(recommend(dir) + "--gpus 4 --tp 2 --global-batch 16 --emit megatron");
  ASSERT_EQ(megatron.code, 0) << megatron.err;
  EXPECT_EQ(megatron.out.rfind("--tensor-model-parallel-size 2 \\\n", 0), 0u) << megatron.out;
  EXPECT_NE(megatron.out.find("--sequence-parallel"), std::string::npos);
  EXPECT_NE(megatron.out.find("--global-batch-size 16"), std::string::npos);
  const Outcome titan = run_papaya(recommend(dir) + "--gpus 4 --global-batch 16 --emit torchtitan --json");
  ASSERT_EQ(titan.code, 0) << titan.err;
  const json doc = json::parse(titan.out);
  EXPECT_EQ(doc["emit"]["engine"], "torchtitan");
  EXPECT_EQ(doc["emit"]["text"].get<std::string>().rfind("[parallelism]\n", 0), 0u);
  for (const json& l : doc["layouts"]) EXPECT_NE(l["zero"], 1);  // torchtitan has no ZeRO-1
}

// What --emit papaya printed (one option and its value a line, ending in " \\")
// as train's options, and each option's value.
std::pair<std::string, std::map<std::string, std::string>> emitted_options(const std::string& text) {
  std::istringstream lines(text);
  std::string flag, value, rest, options;
  std::map<std::string, std::string> values;
  while (lines >> flag >> value >> rest) {
    EXPECT_EQ(rest, "\\") << text;
    options += " " + flag + " " + value;
    values[flag] = value;
  }
  return {options, values};
}

// The layout the search chose for papaya's trainer trains there as planned:
// the ranks laid out as emitted, the losses one process's at the global batch.
TEST(Layouts, TheLayoutEmittedForPapayaTrainsAsSearched) {
  if (!built_with_gloo()) GTEST_SKIP() << "built without Gloo";
  const TempDir dir("papaya-layouts");
  // Without a pipeline a rank's one micro-batch is its share of the global batch.
  for (const auto& [fixed, pipeline] :
       std::vector<std::pair<std::string, int>>{{"--tp 2 --pp 2", 2}, {"--pp 2 --zero 1", 2}, {"--pp 1", 1}}) {
    // In fp32, as one process trains: its losses are then the same to rounding.
    const Outcome searched = run_papaya("recommend --network llama-tiny --hardware H100-SXM-80GB --out " + dir.path("plan.json") +
                                        " --gpus 4 --gpus-per-node 4 --global-batch 8 " + fixed + " --emit papaya --json");
    ASSERT_EQ(searched.code, 0) << searched.err;
    const json doc = json::parse(searched.out);
    ASSERT_EQ(doc["emit"]["engine"], "papaya");
    const auto [options, values] = emitted_options(doc["emit"]["text"]);
    EXPECT_EQ(values.at("--nproc"), "4") << options;
    EXPECT_EQ(values.count("--pp") ? std::stoi(values.at("--pp")) : 1, pipeline) << options;
    const Outcome job = run_papaya("train --network llama-tiny --steps 3 --json --timeout 60" + options);
    ASSERT_EQ(job.code, 0) << options << ": " << job.err;
    const Outcome alone = run_papaya("train --network llama-tiny --steps 3 --json --batch 8 --plan " + values.at("--plan"));
    ASSERT_EQ(alone.code, 0) << alone.err;
    const json ranks = json::parse(job.out);
    EXPECT_EQ(ranks["global_batch"], 8) << options;
    EXPECT_EQ(ranks.value("pipeline", 1), pipeline) << options;
    EXPECT_EQ(ranks["zero"], values.count("--zero") ? std::stoi(values.at("--zero")) : 0) << options;
    expect_losses_of_one_process(ranks, json::parse(alone.out), options);
    if (pipeline == 1) continue;
    // The search's JSON itself trains the same job.
    const std::string searched_file = dir.path("searched.json");
    model::write_json_file(searched_file, doc);
    const Outcome laid = run_papaya("train --steps 3 --json --timeout 60 --layout " + searched_file);
    ASSERT_EQ(laid.code, 0) << options << ": " << laid.err;
    const json from_file = json::parse(laid.out);
    for (const char* key : {"network", "global_batch", "pipeline", "micro_batches", "zero", "tensor", "sequence_parallel"}) {
      EXPECT_EQ(from_file.value(key, json()), ranks.value(key, json())) << key << " of " << options;
    }
    expect_losses_of_one_process(from_file, ranks, options + " from its JSON");
  }
  // What papaya's trainer does not run is refused for it, naming the option.
  const Outcome context = run_papaya(recommend(dir) + "--gpus 4 --cp 2 --emit papaya");
  EXPECT_EQ(context.code, 2);
  EXPECT_NE(context.err.find("--emit papaya: --cp 2 has no papaya argument"), std::string::npos) << context.err;
}

// A plan file made for data-parallel GPUs trains on as many ranks, at its
// ZeRO stage and batch, as one process at their global batch.
TEST(Layouts, APlanFileForDataParallelGpusTrainsOnThem) {
  if (!built_with_gloo()) GTEST_SKIP() << "built without Gloo";
  const TempDir dir("papaya-layouts");
  const std::string plan = dir.path("dp.plan.json");
  const Outcome planned =
      run_papaya("recommend --network gpt-tiny --hardware A100-40GB --gpus 2 --zero 1 --batch 4 --out " + plan);
  ASSERT_EQ(planned.code, 0) << planned.err;
  EXPECT_NE(planned.out.find("(papaya train --layout " + plan + ")"), std::string::npos) << planned.out;
  const Outcome job = run_papaya("train --steps 3 --json --timeout 60 --layout " + plan);
  ASSERT_EQ(job.code, 0) << job.err;
  const json ranks = json::parse(job.out);
  EXPECT_EQ(ranks["network"], "gpt-tiny");
  EXPECT_EQ(ranks["global_batch"], 8);
  EXPECT_EQ(ranks["zero"], 1);
  EXPECT_EQ(ranks["ranks"].size(), 2u);
  const Outcome alone = run_papaya("train --network gpt-tiny --steps 3 --json --batch 8 --plan " + plan);
  ASSERT_EQ(alone.code, 0) << alone.err;
  // --plan alone trains one process, and says what the plan was made for.
  EXPECT_NE(alone.err.find("was planned for 2 data-parallel GPUs, this run has 1: train --layout " + plan), std::string::npos)
      << alone.err;
  expect_losses_of_one_process(ranks, json::parse(alone.out), "--layout " + plan);
  // What the file gives is not given twice; a network it was not made for is refused.
  expect_input_error("train --layout " + plan + " --zero 2", "--layout " + plan + " gives --zero: leave it out");
  expect_input_error("train --layout " + plan + " --batch 2", "gives --batch");
  expect_input_error("train --layout " + plan + " --network mlp-tiny", "the layout was made for gpt-tiny, not mlp-tiny");
  expect_input_error("train --layout " + plan + " --resume " + plan, "--layout with --resume");
  // Under torchrun, a job of other ranks than the file lays out is refused naming the file.
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "4", 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", std::to_string(executor::free_loopback_port()).c_str(), 1);
  const Outcome torchrun = run_papaya("train --steps 2 --timeout 5 --layout " + plan);
  for (const char* name : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) unsetenv(name);
  EXPECT_EQ(torchrun.code, 2) << torchrun.err;
  EXPECT_NE(torchrun.err.find("--layout " + plan + " lays out 2 ranks in a job of WORLD_SIZE=4"), std::string::npos)
      << torchrun.err;
}

TEST(Layouts, ImpossibleSplitsExitTwoNamingTheConstraint) {
  const TempDir dir("papaya-layouts");
  for (const auto& [options, message] : std::vector<std::pair<std::string, std::string>>{
           {"--gpus 6 --tp 3", "4 heads do not split over tensor parallelism 3"},
           {"--gpus 8 --pp 8 --global-batch 64", "2 blocks for 8 pipeline stages"},
           {"--gpus 6 --tp 4", "tensor parallelism 4 with the degrees fixed before it (4 GPUs) does not divide 6 GPUs"},
           {"--gpus 4 --tp 1 --cp 1 --pp 2 --global-batch 2 --micro-batch 1", "1 micro-batches for 2 pipeline stages"},
           {"--gpus 8 --gpus-per-node 4 --budget 1KiB", "no layout of 8 GPUs fits 1.00 KiB a GPU"},
           {"--gpus 4 --emit torchtitan --zero 1", "--emit torchtitan: --zero 1 has no torchtitan argument"},
           {"--gpus 4 --emit papaya --overlap-grad-reduce off", "--emit papaya: --overlap-grad-reduce off has no papaya setting"},
           {"--gpus 4 --ep 2", "expert parallelism 2 on a network without experts"},
           {"--gpus 4 --gpus-per-node 4 --html r.html", "--html r.html: writes one GPU's plan and step"},
       }) {
    const Outcome run = run_papaya(recommend(dir) + options);
    EXPECT_EQ(run.code, 2) << options << ": " << run.err;
    EXPECT_NE(run.err.find(message), std::string::npos) << options << ": " << run.err;
    EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << options << ": one line: " << run.err;
  }
  // What draws or writes one GPU's step is not a layout's answer: refused, not left unwritten.
  expect_input_error("plan m.json --budget 1GiB --gpus 4 --tp 2 --out p.json", "--out p.json: writes one GPU's plan");
  expect_input_error("plan m.json --budget 1GiB --gpus 4 --tp 2 --plot p.svg", "--plot p.svg: writes one GPU's plan");
  expect_input_error("predict m.json --batch 1 --gpus 4 --tp 2 --html p.html", "--html p.html: writes one GPU's plan");
  const Outcome mlp = run_papaya("recommend --network mlp-tiny --hardware H100-SXM-80GB --gpus 4 --gpus-per-node 4 --out " +
                                 dir.path("plan.json"));
  EXPECT_EQ(mlp.code, 2);
  EXPECT_NE(mlp.err.find("no attention layers"), std::string::npos) << mlp.err;
}

}  // namespace
}  // namespace papaya::testing
