// `papaya recommend/plan --gpus N --gpus-per-node G`: a transformer laid out
// over many GPUs, the best layouts within each GPU's memory, handed to
// Megatron-LM and torchtitan; impossible splits exit 2 naming why.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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
  const Outcome run = run_papaya(
      "limits --network llama-tiny --hardware H100-SXM-80GB,T4 --gpus 8 --gpus-per-node 4 --global-batch 32 --json");
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

TEST(Layouts, ImpossibleSplitsExitTwoNamingTheConstraint) {
  const TempDir dir("papaya-layouts");
  for (const auto& [options, message] : std::vector<std::pair<std::string, std::string>>{
           {"--gpus 6 --tp 3", "4 heads do not split over tensor parallelism 3"},
           {"--gpus 8 --pp 8 --global-batch 64", "2 blocks for 8 pipeline stages"},
           {"--gpus 6 --tp 4", "tensor parallelism 4 with the degrees fixed before it (4 GPUs) does not divide 6 GPUs"},
           {"--gpus 4 --tp 1 --cp 1 --pp 2 --global-batch 2 --micro-batch 1", "1 micro-batches for 2 pipeline stages"},
           {"--gpus 8 --gpus-per-node 4 --budget 1KiB", "no layout of 8 GPUs fits 1.00 KiB a GPU"},
           {"--gpus 4 --emit torchtitan --zero 1", "--emit torchtitan: --zero 1 has no torchtitan argument"},
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
