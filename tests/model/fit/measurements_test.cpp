#include "model/fit/measurements.h"

#include <gtest/gtest.h>

#include <sstream>

#include "model/error.h"

namespace papaya::model {
namespace {

const std::string kHeader = "gpu,network,precision,strategy,batch,oom,samples_per_s,iter_s,peak_mib\n";

Measurements parse(const std::string& text) {
  std::istringstream in(text);
  return parse_measurements(in, "runs.csv");
}

// Parsing `text` fails with a message containing every one of `needles`.
void expect_error(const std::string& text, const std::vector<std::string>& needles) {
  try {
    parse(text);
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const InputError& e) {
    for (const auto& needle : needles) EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Measurements, ReadsTheBenchData) {
  const Measurements m = read_measurements(std::string(PAPAYA_SOURCE_DIR) + "/bench/data/papaya-v100.csv");
  EXPECT_EQ(m.series.size(), 37u);
  const auto& first = m.series.front();
  EXPECT_EQ(first.gpu, "V100-16GB");
  EXPECT_EQ(first.gpu_memory_bytes, 16.0 * (1 << 30));
  EXPECT_EQ(first.network, "bert-large-cased");
  EXPECT_EQ(first.strategy, "checkpoint");
  EXPECT_EQ(first.runs.front().line, 2);
  EXPECT_TRUE(first.runs.front().oom);
  const MeasuredRun& run = first.runs[1];  // v100,bert-large-cased,fp16,checkpoint,12,0,79.23,0.140339,5456.9
  EXPECT_EQ(run.batch, 12);
  EXPECT_DOUBLE_EQ(*run.peak_bytes, 5456.9 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(run.throughput(), 79.23);
  EXPECT_DOUBLE_EQ(run.iteration_s(), 12 / 79.23);
}

TEST(Measurements, PeaksAboveTheGpuInMibAreBytes) {
  const Measurements m = parse(kHeader +
                               "v100,gpt,fp16,none,1,0,6.7,,8507009536\n"
                               "v100,gpt,fp16,none,2,0,14.0,,8866094080\n"
                               "v100,resnet,fp32,none,32,0,333.3,,2979.6\n");
  ASSERT_EQ(m.series.size(), 2u);
  EXPECT_TRUE(m.series[0].peak_was_bytes);
  EXPECT_DOUBLE_EQ(*m.series[0].runs[0].peak_bytes, 8507009536.0);
  EXPECT_FALSE(m.series[1].peak_was_bytes);
  EXPECT_DOUBLE_EQ(*m.series[1].runs[0].peak_bytes, 2979.6 * 1024 * 1024);
}

TEST(Measurements, ColumnsAreFoundByName) {
  const Measurements m = parse(
      "batch,oom,gpu,network,precision,strategy,iter_s,samples_per_s,peak_mib\n"
      "16,0,A100-40GB,bert,fp16,checkpoint,0.5,,\n"
      "\n"
      "32,1,A100-40GB,bert,fp16,checkpoint,,,\r\n");
  ASSERT_EQ(m.series.size(), 1u);
  EXPECT_EQ(m.series[0].gpu, "A100-40GB");
  ASSERT_EQ(m.series[0].runs.size(), 2u);
  EXPECT_DOUBLE_EQ(m.series[0].runs[0].throughput(), 32.0);
  EXPECT_FALSE(m.series[0].runs[0].peak_bytes);
  EXPECT_EQ(m.series[0].runs[1].line, 4);
  EXPECT_TRUE(m.series[0].runs[1].oom);
}

// A gpus column splits series by GPU count; without it every run is on one GPU.
TEST(Measurements, GpusColumnSplitsSeriesByCount) {
  const Measurements m = parse(
      "gpus,gpu,network,precision,strategy,batch,oom,samples_per_s,iter_s,peak_mib\n"
      "1,v100,bert,fp16,none,8,0,100,,\n"
      "2,v100,bert,fp16,none,8,0,180,,\n"
      "1,v100,bert,fp16,none,16,0,120,,\n");
  ASSERT_EQ(m.series.size(), 2u);
  EXPECT_EQ(m.series[0].gpus, 1);
  EXPECT_EQ(m.series[0].runs.size(), 2u);
  EXPECT_EQ(m.series[1].gpus, 2);
  EXPECT_EQ(parse(kHeader + "v100,bert,fp16,none,8,0,100,,\n").series[0].gpus, 1);
  expect_error("gpus,gpu,network,precision,strategy,batch,oom,samples_per_s,iter_s,peak_mib\n0,v100,bert,fp16,none,8,0,100,,\n",
               {"runs.csv:2", "column 'gpus'", "positive integer"});
}

TEST(Measurements, MalformedRowsNameFileLineAndColumn) {
  expect_error("", {"runs.csv:1:", "header"});
  expect_error("gpu,network,precision,strategy,batch,oom,samples_per_s,iter_s\n", {"runs.csv:1:", "missing column 'peak_mib'"});
  expect_error("gpu,network,precision,strategy,batch,oom,samples_per_s,iter_s,peak_mib,power_w\n",
               {"runs.csv:1:", "unknown column 'power_w'"});
  expect_error("gpu,gpu,network,precision,strategy,batch,oom,samples_per_s,iter_s,peak_mib\n", {"runs.csv:1:", "twice"});
  expect_error(kHeader + "v100,bert,fp16,none,4,0,34.8,0.1\n", {"runs.csv:2:", "8 cells, expected 9"});
  expect_error(kHeader + "v100,bert,fp16,none,4,0,34.8,0.1,100\nv100,bert,fp16,none,8,0,fast,0.1,200\n",
               {"runs.csv:3:", "column 'samples_per_s'", "'fast' is not a positive number"});
  expect_error(kHeader + "v100,bert,fp16,none,-4,0,34.8,0.1,100\n", {"runs.csv:2:", "column 'batch'", "positive integer"});
  expect_error(kHeader + "v100,bert,fp16,none,2.5,0,34.8,0.1,100\n", {"runs.csv:2:", "column 'batch'"});
  expect_error(kHeader + "v100,bert,fp16,none,4,yes,34.8,0.1,100\n", {"runs.csv:2:", "column 'oom'", "0 or 1"});
  expect_error(kHeader + "v100,bert,fp16,none,4,0,34.8,0.1,-100\n", {"runs.csv:2:", "column 'peak_mib'"});
  expect_error(kHeader + "v100,bert,fp16,none,4,0,,,100\n", {"runs.csv:2:", "needs one"});
  expect_error(kHeader + "v100,,fp16,none,4,0,34.8,0.1,100\n", {"runs.csv:2:", "column 'network'", "empty"});
  // MiB and bytes mixed in one series: no reading of it is right.
  expect_error(kHeader + "v100,bert,fp16,none,4,0,34.8,0.1,6000\nv100,bert,fp16,none,8,0,50,0.1,7000000000\n",
               {"runs.csv:3:", "column 'peak_mib'", "above the V100-16GB's memory"});
}

// The PAPAYA authors' K80 runs (benchmarks/resnet/k80): "unknown hardware
// 'k80'" before the catalog had it.
TEST(Measurements, K80RowsAreTheCatalogK80) {
  const Measurements m = parse(kHeader +
                               "k80,resnet50,fp32,none,32,0,46.1,,\n"
                               "k80,resnet50,fp32,none,128,1,,,\n");
  ASSERT_EQ(m.series.size(), 1u);
  EXPECT_EQ(m.series[0].gpu, "K80");
  EXPECT_EQ(m.series[0].gpu_memory_bytes, 12.0 * (1 << 30));  // one of the board's two GPUs
}

TEST(Measurements, GpuOutsideTheCatalogKeepsItsNameAndHasNoMemory) {
  const Measurements m = parse(kHeader + "m40,bert,fp16,none,16,0,70,,17000\nm40,gpt,fp16,none,4,0,10,,8507009536\n");
  ASSERT_EQ(m.series.size(), 2u);
  EXPECT_EQ(m.series[0].gpu, "m40");
  EXPECT_FALSE(m.series[0].gpu_memory_bytes);
  // MiB or bytes against the largest memory in the catalog.
  EXPECT_DOUBLE_EQ(*m.series[0].runs[0].peak_bytes, 17000.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(*m.series[1].runs[0].peak_bytes, 8507009536.0);
  expect_error(kHeader + "m40,bert,fp16,none,8,0,40,,9000\nm40,bert,fp16,none,16,0,70,,300000\n",
               {"runs.csv:3:", "column 'peak_mib'", "above the largest memory in the hardware catalog"});
}

TEST(Measurements, MissingFileIsAnInputError) { EXPECT_THROW(read_measurements("/nonexistent/runs.csv"), InputError); }

}  // namespace
}  // namespace papaya::model
