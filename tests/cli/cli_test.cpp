// End-to-end runs of the papaya binary: outputs and exit codes.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include <unistd.h>

#include "model/catalog/network_config.h"
#include "model/catalog/parameter_count.h"
#include "model/units.h"
#include "tests/cli/run_papaya.h"

namespace papaya::testing {
namespace {

using nlohmann::json;

TEST(Cli, VersionAndHelp) {
  Outcome run = run_papaya("--version");
  EXPECT_EQ(run.code, 0);
  EXPECT_EQ(run.out.rfind("papaya ", 0), 0u) << run.out;
  run = run_papaya("--help");
  EXPECT_EQ(run.code, 0);
  for (const char* command : {"networks", "hardware", "train"}) EXPECT_NE(run.out.find(command), std::string::npos);
  run = run_papaya("train --help");
  EXPECT_EQ(run.code, 0);
  EXPECT_NE(run.out.find("--precision"), std::string::npos);
}

// Every command shows its result as text or, with --json, as one JSON
// document (cli/report/report.h): each command listed by --help takes --json.
TEST(Cli, EveryCommandTakesJson) {
  const Outcome help = run_papaya("--help");
  ASSERT_EQ(help.code, 0);
  const size_t listed = help.out.find("Subcommands:");
  ASSERT_NE(listed, std::string::npos) << help.out;
  std::istringstream lines(help.out.substr(listed));
  std::string line;
  std::getline(lines, line);
  int commands = 0;
  while (std::getline(lines, line) && line.rfind("  ", 0) == 0) {
    const std::string command = line.substr(2, line.find(' ', 2) - 2);
    const Outcome run = run_papaya(command + " --help");
    EXPECT_EQ(run.code, 0) << command;
    EXPECT_NE(run.out.find("--json"), std::string::npos) << command << " has no --json";
    ++commands;
  }
  EXPECT_GE(commands, 10);
}

TEST(Cli, NetworksListsTheZoo) {
  Outcome run = run_papaya("networks --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json list = json::parse(run.out);
  EXPECT_GE(list.size(), 11u);
  for (const auto& entry : list) EXPECT_GT(entry.at("parameters").get<int64_t>(), 0);
  run = run_papaya("networks");
  EXPECT_NE(run.out.find("gpt2-medium"), std::string::npos);
}

// A HuggingFace config.json: imported, written, and taken as --network.
TEST(Cli, ImportHfWritesAPapayaConfigThatEveryCommandTakes) {
  const std::string dir = (std::filesystem::temp_directory_path() / ("papaya-import-hf-" + std::to_string(getpid()))).string();
  std::filesystem::create_directories(dir);
  const std::string hf = dir + "/tiny-gpt2.json", out = dir + "/tiny.json";
  std::ofstream(hf) << R"({"model_type": "gpt2", "n_embd": 32, "n_head": 2, "n_layer": 1, "n_positions": 64, "vocab_size": 40})";
  Outcome run = run_papaya("import-hf " + hf + " --seq-len 16 --out " + out + " --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json imported = json::parse(run.out);
  EXPECT_EQ(imported.at("network_config").at("seq_len"), 16);
  EXPECT_GT(imported.at("parameters").get<int64_t>(), 0);
  EXPECT_TRUE(std::filesystem::exists(out));
  run = run_papaya("train --network " + hf + " --batch 2 --steps 2 --json");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(json::parse(run.out).at("network"), "tiny-gpt2");
  std::ofstream(hf) << R"({"model_type": "t5"})";
  run = run_papaya("import-hf " + hf);
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.err.find("/model_type: 't5' is not a supported model type"), std::string::npos) << run.err;
  std::filesystem::remove_all(dir);
}

// --seq-len on the commands that take a network: what is profiled is the
// config at that length (recorded in the profile), and a length the network
// cannot have is exit 2 naming it.
TEST(Cli, SeqLenSetsTheTrainedSequence) {
  const std::string dir = (std::filesystem::temp_directory_path() / ("papaya-seq-len-" + std::to_string(getpid()))).string();
  std::filesystem::create_directories(dir);
  const std::string hf = dir + "/tiny-llama.json", profile = dir + "/p.json";
  std::ofstream(hf) << R"({"model_type": "llama", "hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2,
                           "num_hidden_layers": 1, "intermediate_size": 48, "vocab_size": 40,
                           "max_position_embeddings": 4096})";
  Outcome run = run_papaya("profile --network " + hf + " --seq-len 24 --batch 1,2 --steps 1 --warmup 0 --out " + profile);
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(json::parse(std::ifstream(profile)).at("network_config").at("seq_len"), 24);
  run = run_papaya("train --network gpt-tiny --seq-len 16 --batch 2 --steps 2 --json");
  ASSERT_EQ(run.code, 0) << run.err;
  run = run_papaya("train --network gpt-tiny --seq-len 64 --batch 2 --steps 2");
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.err.find("gpt-tiny.json: sequence length: 64 is past the 32 positions of its learned position table"),
            std::string::npos)
      << run.err;
  run = run_papaya("recommend --network vit-tiny --seq-len 16");
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.err.find("a vit network has no token sequence"), std::string::npos) << run.err;
  EXPECT_FALSE(std::filesystem::exists("vit-tiny.plan.json"));
  // A model at another length takes three profiles at three lengths.
  const std::string model = dir + "/m.json";
  expect_input_error("fit " + profile + " --seq-len 96 --out " + model,
                     "give three profiles of the network at three sequence lengths (1 given)");
  expect_input_error("fit " + profile + " " + profile + " " + profile + " --seq-len 96 --out " + model,
                     "the profiles' sequence lengths must differ (24, 24, 24)");
  expect_input_error("fit " + profile + " " + profile + " --out " + model, "one profile, or three with --seq-len N (2 given)");
  EXPECT_FALSE(std::filesystem::exists(model));
  std::filesystem::remove_all(dir);
}

TEST(Cli, HardwareListsTheCatalog) {
  Outcome run = run_papaya("hardware --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json entries = json::parse(run.out);
  EXPECT_EQ(entries.size(), 17u);
  for (const auto& h : entries) {
    EXPECT_GT(h["interconnect_bytes_per_s"].get<double>(), 0) << h["name"];
    EXPECT_GT(h["sm_count"].get<int>(), 0) << h["name"];
    EXPECT_FALSE(h["kernel_model"]["measured"].get<bool>()) << h["name"];
  }
  run = run_papaya("hardware --sources");
  EXPECT_NE(run.out.find("NVLink-2\n  bandwidth: NVIDIA Tesla V100 GPU datasheet"), std::string::npos);
  EXPECT_NE(run.out.find("datasheet"), std::string::npos);
  EXPECT_NE(run.out.find("K80\n  host_link: NVIDIA Tesla K80 GPU Accelerator board specification"), std::string::npos);
  EXPECT_NE(run.out.find("MI300X\n  host_link: AMD Instinct MI300X accelerator data sheet"), std::string::npos);
}

TEST(Cli, CalibrateRefusesACpuAndWritesNothing) {
  TempDir dir("papaya-calibrate");
  const std::string out = dir.path("gpu.json");
  expect_input_error("calibrate --device cpu --out " + out, "calibrate measures a GPU's kernels");
  EXPECT_FALSE(std::filesystem::exists(out));
  expect_input_error("calibrate --device tpu --out " + out, "device tpu: expected cpu, cuda or cuda:N");
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(Cli, TrainGptTinyJson) {
  const Outcome run = run_papaya("train --network gpt-tiny --batch 8 --steps 20 --device cpu --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json out = json::parse(run.out);
  for (const char* key :
       {"samples_per_s", "median_samples_per_s", "median_step_seconds", "peak_bytes", "static_bytes", "final_loss"}) {
    ASSERT_TRUE(out.contains(key)) << key;
    EXPECT_TRUE(std::isfinite(out[key].get<double>())) << key;
    EXPECT_GT(out[key].get<double>(), 0) << key;
  }
  EXPECT_LT(out["final_loss"].get<double>(), out["initial_loss"].get<double>());
  EXPECT_GT(out["peak_bytes"].get<double>(), out["static_bytes"].get<double>());
  EXPECT_EQ(out["losses"].size(), 20u);
}

TEST(Cli, TrainOnATextFile) {
  const std::string text = "/usr/share/common-licenses/GPL-3";
  if (!std::filesystem::exists(text)) GTEST_SKIP() << text << " is not on this machine";
  const Outcome run = run_papaya("train --network gpt-tiny --steps 5 --data " + text + " --json");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_TRUE(std::isfinite(json::parse(run.out)["final_loss"].get<double>()));
}

TEST(Cli, TrainPrintsATable) {
  const Outcome run = run_papaya("train --network mlp-tiny --steps 3");
  ASSERT_EQ(run.code, 0) << run.err;
  for (const char* row : {"samples/s", "median step", "peak memory", "static memory", "loss"}) {
    EXPECT_NE(run.out.find(row), std::string::npos) << row;
  }
}

TEST(Cli, BadInputExitsTwoWithOneLine) {
  expect_input_error("train --network gpt-huge", "unknown network 'gpt-huge'");
  expect_input_error("train --network /nonexistent/net.json", "no such network config file");
  expect_input_error("train --device cuda", "device cuda: ");
  expect_input_error("train --device tpu", "device tpu: expected cpu, cuda or cuda:N");
  expect_input_error("train --precision fp16", "precision fp16: ");
  expect_input_error("train --data /nonexistent/corpus.txt", "cannot read");
  expect_input_error("train --network bert-tiny --data /etc/hostname", "gpt");
  expect_input_error("train --batch 0", "--batch");
  expect_input_error("train --batch abc", "--batch");
  expect_input_error("train --stpes 3", "stpes");
  expect_input_error("frobnicate", "frobnicate");
}

// --attention: fused (the default) or materialized, the one asked for run;
// where it cannot apply, said in one line naming the flag.
TEST(Cli, AttentionIsFusedOrMaterializedAsAsked) {
  const TempDir dir("papaya-attention");
  const auto first_layers = [&](const std::string& flags) {
    const Outcome run =
        run_papaya("profile --network gpt-tiny --batch 1,2 --probe-batch 0 --steps 2 --out " + dir.path("p.json") + flags);
    EXPECT_EQ(run.code, 0) << run.err;
    std::vector<std::string> kinds;
    const json profile = json::parse(std::ifstream(dir.path("p.json")));
    for (const auto& layer : profile["layers"]) {
      if (layer["path"].get<std::string>().rfind("blocks.0.attn.", 0) == 0) kinds.push_back(layer["kind"]);
    }
    return kinds;
  };
  EXPECT_EQ(first_layers(""), (std::vector<std::string>{"linear", "fused_attention", "linear"}));
  EXPECT_EQ(first_layers(" --attention materialized"),
            (std::vector<std::string>{"linear", "attention_scores", "softmax", "attention_context", "linear"}));
  expect_input_error("train --network resnet-tiny --attention fused",
                     "--attention: resnet-tiny is a resnet network: it has no attention");
  expect_input_error("train --network gpt-tiny --attention flash", "--attention");
  expect_input_error("train --network gpt-tiny --plan recompute-attention", "recompute-attention has nothing to drop");
}

// QLoRA from the command line: a Llama fine-tuned with rank-4 adapters on
// nf4 weights trains, its trainable count beside the total; the flags that
// cannot apply are named.
TEST(Cli, QloraTrainsAndItsFlagsAreChecked) {
  const Outcome run = run_papaya("train --network llama-tiny --lora 4 --base-weights nf4 --batch 2 --steps 2 --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json out = json::parse(run.out);
  EXPECT_GT(out.at("parameters").get<double>(), out.at("trainable_parameters").get<double>());
  expect_input_error("train --network llama-tiny --base-weights nf4", "--base-weights applies with --lora RANK");
  expect_input_error("train --network llama-tiny --lora 4 --base-weights nf5",
                     "--base-weights: 'nf5' is no weight format (fp32, bf16, int8, nf4)");
  expect_input_error("recommend --network resnet-tiny --lora 4 --base-weights nf4", "a resnet network has none");
  expect_input_error("train --network llama-tiny --lora 4 --lora-targets qkv,fc1",
                     "--lora-targets: 'fc1' names no projection of llama-tiny (its projections: qkv, o, gate, up, down)");
}

// FP8: trained (the emulation) and, where a chip has no FP8 products,
// refused before any profiling, naming chip and precision.
TEST(Cli, Fp8TrainsAndNeedsAChipWithFp8) {
  const Outcome run = run_papaya("train --network gpt-tiny --precision fp8-delayed --batch 2 --steps 2 --json");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(json::parse(run.out).at("precision"), "fp8-delayed");
  const std::string missing = "hardware A100-80GB has no FP8 products (peak_tflops.fp8): precision fp8-tensorwise needs them";
  expect_input_error("recommend --network gpt-tiny --hardware A100-80GB --precision fp8-tensorwise", missing);
  expect_input_error("limits --network gpt-tiny --hardware H100-SXM-80GB,A100-80GB --precision fp8-tensorwise", missing);
  expect_input_error("train --network gpt-tiny --precision fp8", "precision fp8: expected fp32, bf16");
}

// A budget below each GPU's share of the weights, gradients and AdamW state
// is refused before profiling, pointing to `limits` (a mixture of 671
// billion parameters took six minutes and 13.6 GB to reach the planner's
// refusal after its profile), and nothing is written.
TEST(Cli, RecommendRefusesABudgetBelowTheStateBeforeProfiling) {
  const TempDir dir("papaya-state");
  const std::string plan = dir.path("ds.plan.json");
  const std::string deepseek = std::string(PAPAYA_SOURCE_DIR) + "/configs/hf/deepseek-v3.json";
  const std::string state = model::format_bytes(model::static_state_bytes(model::load_network_config(deepseek)));
  expect_input_error("recommend --network " + deepseek + " --hardware H100-SXM-80GB -o " + plan,
                     "budget 64.00 GiB is below the weights, gradients and optimizer state alone (" + state + "): papaya limits");
  EXPECT_FALSE(std::filesystem::exists(plan));
  expect_input_error("recommend --network " + deepseek + " --hardware H100-SXM-80GB --gpus 8 -o " + plan,
                     "a GPU of 8): papaya limits --network " + deepseek + " says how many GPUs it needs");
  expect_input_error("recommend --network gpt-tiny --budget 1KiB -o " + plan, "budget 1.00 KiB is below the weights");
  EXPECT_FALSE(std::filesystem::exists(plan));
}

// --freeze: the layers named train not (the count printed beside the
// total), and patterns that name nothing, everything, or no range are named.
TEST(Cli, FreezeNamesTheLayersThatTrainNot) {
  const Outcome run = run_papaya("train --network gpt-tiny --freeze 'tok_emb,pos_emb,blocks.[0-0].*' --batch 2 --steps 2 --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json out = json::parse(run.out);
  EXPECT_GT(out.at("trainable_parameters").get<double>(), 0);
  EXPECT_LT(out.at("trainable_parameters").get<double>(), out.at("parameters").get<double>() / 2);
  expect_input_error("train --network gpt-tiny --freeze 'embed*'",
                     "--freeze: 'embed*' matches no layer with weights of gpt-tiny");
  expect_input_error("train --network mlp-tiny --freeze '*'",
                     "--freeze: freezes every layer with weights of mlp-tiny: nothing would train");
  expect_input_error("recommend --network gpt-tiny --freeze 'blocks.[1-0].*'",
                     "--freeze: 'blocks.[1-0].*': a bracket is a range");
}

// A mixture of experts is imported and counted, and what cannot run it yet
// says so (exit 2), as does a config routing a token to more experts than
// it has.
TEST(Cli, MixturesOfExpertsAreCountedAndTrained) {
  const std::string mixtral = std::string(PAPAYA_SOURCE_DIR) + "/configs/hf/mixtral-8x7b.json";
  const Outcome run = run_papaya("import-hf " + mixtral + " --json");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("46702792704"), std::string::npos) << run.out;
  const Outcome trained = run_papaya("train --network qwen-moe-tiny --batch 2 --steps 2 --plan recompute-all --json");
  ASSERT_EQ(trained.code, 0) << trained.err;
  const json losses = nlohmann::json::parse(trained.out).at("losses");
  for (double loss : losses) EXPECT_TRUE(std::isfinite(loss)) << trained.out;
  // A busiest expert's share: from balanced (1/4) to every token (1/2).
  expect_input_error("train --network mixtral-tiny --moe-imbalance 0.7 --steps 1",
                     "--moe-imbalance: 0.7 is not a busiest expert's share of mixtral-tiny's routings: a share from 1/4 "
                     "(balanced) to 1/2 (every token)");
  expect_input_error("profile --network mixtral-tiny --moe-imbalance 0.2 --out x.json", "--moe-imbalance: 0.2 is not");
  expect_input_error("train --network gpt-tiny --moe-imbalance 0.5 --steps 1",
                     "--moe-imbalance: gpt-tiny has no mixture of experts");
}

TEST(Cli, BadConfigFilesNameTheProblem) {
  // One folder per process: other checkouts may run these tests at the same time.
  const auto dir = std::filesystem::temp_directory_path() / ("papaya-cli-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream((dir / name).string()) << text;
    return (dir / name).string();
  };
  expect_input_error("train --network " + write("malformed.json", "{\"name\": "), "malformed JSON");
  expect_input_error("train --network " + write("unknown-key.json",
                                                R"({"name":"x","family":"mlp","input":4,"hidden":[4],"classes":2,"colour":1})"),
                     "colour");
  expect_input_error(
      "train --network " + write("wrong-type.json", R"({"name":"x","family":"mlp","input":"4","hidden":[4],"classes":2})"),
      "/input");
  expect_input_error(
      "train --network " + write("negative.json", R"({"name":"x","family":"mlp","input":4,"hidden":[0],"classes":2})"),
      "/hidden/0");
  expect_input_error(
      "train --network " +
          write("heads.json", R"({"name":"x","family":"gpt","layers":1,"d_model":10,"heads":3,"seq_len":4,"vocab":9})"),
      "heads do not divide d_model");
  std::filesystem::remove_all(dir);
}

TEST(Cli, TrainWithAPlanReportsWhatItStores) {
  const Outcome keep = run_papaya("train --network gpt-tiny --steps 4 --json");
  const Outcome run = run_papaya("train --network gpt-tiny --steps 4 --plan quantize-2+invert --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json out = json::parse(run.out);
  EXPECT_EQ(out["plan"], "quantize-2+invert");
  for (const char* strategy : {"quantize-2", "invert", "keep"}) {
    ASSERT_TRUE(out["stored_bytes"].contains(strategy)) << out["stored_bytes"].dump();
    EXPECT_GT(out["stored_bytes"][strategy].get<int64_t>(), 0) << strategy;
  }
  const json baseline = json::parse(keep.out);
  EXPECT_EQ(baseline["stored_bytes"].size(), 1u) << baseline["stored_bytes"].dump();
  EXPECT_LT(out["activation_bytes"].get<int64_t>(), baseline["activation_bytes"].get<int64_t>());
  EXPECT_TRUE(std::isfinite(out["final_loss"].get<double>()));
}

TEST(Cli, TrainWithAPlanFile) {
  const Outcome run =
      run_papaya("train --network gpt-tiny --steps 3 --plan " PAPAYA_SOURCE_DIR "/configs/plans/gpt-tiny-mixed.json");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("plan gpt-tiny-mixed"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("stored: quantize-4"), std::string::npos) << run.out;
}

TEST(Cli, BadPlansExitTwoNamingTheProblem) {
  const auto dir = std::filesystem::temp_directory_path() / ("papaya-cli-plan-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream((dir / name).string()) << text;
    return (dir / name).string();
  };
  expect_input_error("train --plan fastest", "unknown plan 'fastest'");
  expect_input_error("train --plan " + write("path.json", R"({"papaya_plan": 1, "tensors": {"blocks.7.mlp.fc1": "quantize-4"}})"),
                     "/tensors/blocks.7.mlp.fc1: no saved tensor");
  expect_input_error(
      "train --plan " + write("invert.json", R"({"papaya_plan": 1, "tensors": {"blocks.0.mlp.fc1:input": "invert"}})"),
      "invert applies to the input of a gelu or silu layer only");
  expect_input_error("train --plan " + write("other.json", R"({"papaya_plan": 1, "network": "bert-tiny"})"),
                     "made for bert-tiny");
  expect_input_error("train --plan swap", "plan 'swap' swaps blocks.0.ln1:input to host memory, which needs a CUDA device");
  expect_input_error("train --plan recompute-all+swap", "swaps blocks.0 (segment input)");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace papaya::testing
