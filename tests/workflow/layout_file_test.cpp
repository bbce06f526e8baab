// workflow::read_layout_file: the layout a trainer runs from what plan and
// recommend wrote (a layout search's JSON, a plan file made for
// data-parallel GPUs), and what it refuses, naming the file.
#include "workflow/training/layout_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "model/json_file.h"
#include "model/parallel/parallel_layout_json.h"
#include "tests/support/input_error.h"

namespace papaya::workflow {
namespace {

using test_support::input_error_of;

class LayoutFiles : public ::testing::Test {
 protected:
  void SetUp() override { std::filesystem::create_directories(dir_); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const nlohmann::json& doc) const {
    const std::string path = (dir_ / name).string();
    model::write_json_file(path, doc);
    return path;
  }
  // A layout search's JSON whose best layout is `best`.
  static nlohmann::json search_of(const model::ParallelLayout& best) {
    nlohmann::json layout = model::parallel_layout_json(best);
    layout["plan"] = "recompute-all";
    model::ParallelLayout worse;
    worse.data = best.gpus();
    nlohmann::json second = model::parallel_layout_json(worse);
    second["plan"] = "keep";
    return {{"network", "llama-tiny"}, {"precision", "bf16"}, {"tokens", 32}, {"layouts", {layout, second}}};
  }
  static nlohmann::json plan_file(const nlohmann::json& predicted) {
    return {{"papaya_plan", 1}, {"name", "keep"}, {"network", "gpt-tiny"}, {"batch", 4}, {"predicted", predicted}};
  }
  std::filesystem::path dir_ = std::filesystem::temp_directory_path() / ("papaya-layout-file-" + std::to_string(::getpid()));
};

TEST_F(LayoutFiles, ASearchGivesItsBestLayoutWithItsPlanAndPrecision) {
  model::ParallelLayout best;
  best.tensor = 2, best.sequence = true, best.pipeline = 2, best.micro_batches = 4, best.micro_batch = 2;
  const LayoutFile file = read_layout_file(write("search.json", search_of(best)));
  EXPECT_EQ(file.layout.label(), best.label());
  EXPECT_EQ(file.plan, "recompute-all");
  EXPECT_EQ(file.precision, "bf16");
  EXPECT_EQ(file.network, "llama-tiny");
  EXPECT_EQ(file.tokens, 32);
}

TEST_F(LayoutFiles, APlanFileGivesItsGpusZeroStageAndBatch) {
  const std::string path = write("dp.plan.json", plan_file({{"gpus", 2}, {"zero", 1}, {"batch", 4}}));
  const LayoutFile file = read_layout_file(path);
  EXPECT_EQ(file.layout.data, 2);
  EXPECT_EQ(file.layout.gpus(), 2);
  EXPECT_EQ(file.layout.zero_stage, 1);
  EXPECT_EQ(file.layout.micro_batch, 4);
  EXPECT_EQ(file.plan, path);
  EXPECT_EQ(file.precision, "");
  EXPECT_EQ(file.network, "gpt-tiny");
  EXPECT_EQ(gpus_planned_for(path), 2);
  // Made for one GPU: one rank.
  const std::string one = write("one.plan.json", plan_file({{"batch", 4}}));
  EXPECT_EQ(read_layout_file(one).layout.gpus(), 1);
  EXPECT_EQ(gpus_planned_for(one), 1);
  EXPECT_EQ(gpus_planned_for("keep"), 1);  // a plan name
}

TEST_F(LayoutFiles, WhatIsNoLayoutIsRefusedNamingTheFile) {
  const auto error = [&](const std::string& name, const nlohmann::json& doc) {
    const std::string path = write(name, doc);
    return input_error_of([&] { read_layout_file(path); });
  };
  EXPECT_NE(error("other.json", {{"a", 1}}).find("other.json: neither the JSON of a layout search"), std::string::npos);
  nlohmann::json search = search_of(model::ParallelLayout{});
  search["layouts"] = nlohmann::json::array();
  EXPECT_NE(error("empty.json", search).find("empty.json: /layouts"), std::string::npos) << error("empty.json", search);
  search = search_of(model::ParallelLayout{});
  search["network"] = 3;
  EXPECT_NE(error("named.json", search).find("named.json: /network"), std::string::npos) << error("named.json", search);
  EXPECT_NE(error("gpus.plan.json", plan_file({{"gpus", "2"}})).find("gpus.plan.json: /predicted/gpus"), std::string::npos)
      << error("gpus.plan.json", plan_file({{"gpus", "2"}}));
  search = search_of(model::ParallelLayout{});
  search["layouts"][0]["micro_batches"] = 0;
  EXPECT_NE(error("zero.json", search).find("zero.json: /layouts/0: /micro_batches"), std::string::npos)
      << error("zero.json", search);
  nlohmann::json no_batch = plan_file({{"gpus", 2}});
  no_batch.erase("batch");
  EXPECT_NE(error("nb.plan.json", no_batch).find("nb.plan.json: /batch: the plan names no batch"), std::string::npos);
  EXPECT_NE(error("z.plan.json", plan_file({{"gpus", 1}, {"zero", 2}})).find("z.plan.json: /predicted: layout: ZeRO stage 2"),
            std::string::npos);
}

TEST_F(LayoutFiles, ANetworkItWasNotMadeForIsRefused) {
  const std::string path = write("search.json", search_of(model::ParallelLayout{}));
  const LayoutFile file = read_layout_file(path);
  EXPECT_EQ(input_error_of([&] { check_made_for(file, model::load_network_config("llama-tiny"), path); }), "");
  EXPECT_EQ(input_error_of([&] { check_made_for(file, model::load_network_config("gpt-tiny"), path); }),
            path + ": the layout was made for llama-tiny, not gpt-tiny");
  EXPECT_EQ(input_error_of([&] { check_made_for(file, model::load_network_config("llama-tiny", 16), path); }),
            path + ": the layout was priced at 32 tokens a sample, not 16");
}

}  // namespace
}  // namespace papaya::workflow
