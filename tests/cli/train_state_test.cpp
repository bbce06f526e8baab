// papaya train's faults end to end: --save and --resume go on bit for bit,
// a signal saves and stops, damaged or mismatched states and a loss that is
// not finite are one-line errors with exit code 2, and one step's figures
// are right.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "tests/cli/run_papaya.h"

extern char** environ;

namespace papaya::testing {
namespace {

using nlohmann::json;

json train_json(const std::string& args) {
  const Outcome run = run_papaya("train " + args + " --json");
  EXPECT_EQ(run.code, 0) << args << "\n" << run.err;
  return run.code == 0 ? json::parse(run.out) : json();
}

TEST(CliTrainState, ResumeGoesOnAsIfNeverStopped) {
  const TempDir dir("papaya-cli-resume");
  const std::string state = dir.path("gpt.state");
  for (const std::string run :
       {"--network gpt-tiny --batch 4", "--network gpt-tiny --batch 4 --precision bf16 --plan quantize-4"}) {
    const json whole = train_json(run + " --steps 5");
    const json first = train_json(run + " --steps 2 --save " + state);
    EXPECT_EQ(first.at("saved"), state);
    const json rest = train_json("--resume " + state + " --steps 5");
    EXPECT_EQ(rest.at("first_step"), 2);
    EXPECT_EQ(rest.at("steps_done"), 5);
    EXPECT_EQ(rest.at("plan"), whole.at("plan"));
    EXPECT_EQ(rest.at("precision"), whole.at("precision"));
    EXPECT_EQ(rest.at("losses"), whole.at("losses")) << run;  // the whole run's, exactly
    EXPECT_EQ(rest.at("final_loss"), whole.at("final_loss")) << run;
  }
}

TEST(CliTrainState, MismatchedOrDamagedStatesAreInputErrors) {
  const TempDir dir("papaya-cli-state-errors");
  const std::string state = dir.path("gpt.state");
  train_json("--network gpt-tiny --batch 4 --steps 2 --save " + state);
  expect_input_error("train --resume " + state + " --steps 4 --network bert-tiny", "another network than bert-tiny");
  expect_input_error("train --resume " + state + " --steps 4 --batch 8", "its run has batch 4, not 8");
  expect_input_error("train --resume " + state + " --steps 4 --plan quantize-4", "plan 'keep', not quantize-4");
  expect_input_error("train --resume " + state + " --steps 2", "at step 2 already");
  expect_input_error("train --resume " + state + " --steps 4 --plan auto --budget 1GiB", "leave out --plan auto");
  expect_input_error("train --network gpt-tiny --save-every 2", "--save-every needs --save");
  // --network and --batch as recorded are fine.
  train_json("--resume " + state + " --steps 3 --network gpt-tiny --batch 4");

  const std::string junk = dir.path("junk.state");
  std::ofstream(junk) << "{}";
  expect_input_error("train --resume " + junk + " --steps 4", "not a papaya training state");
  std::filesystem::copy_file(state, dir.path("cut.state"));
  std::filesystem::resize_file(dir.path("cut.state"), std::filesystem::file_size(state) / 3);
  expect_input_error("train --resume " + dir.path("cut.state") + " --steps 4", "not a papaya training state");
}

// SIGTERM while training: the state is saved after the step in progress and
// papaya exits as a signal would (128 + 15); the run goes on from there.
TEST(CliTrainState, SigtermSavesAndStops) {
  const TempDir dir("papaya-cli-sigterm");
  const std::string state = dir.path("gpt.state");
  std::vector<std::string> args = {PAPAYA_BINARY, "train",  "--network", "gpt-tiny",     "--batch", "4",     "--steps",
                                   "100000",      "--save", state,       "--save-every", "1",       "--json"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, dir.path("out").c_str(), O_WRONLY | O_CREAT, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, dir.path("err").c_str(), O_WRONLY | O_CREAT, 0644);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, PAPAYA_BINARY, &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);

  // Training has begun once the first step's state is there (bounded: 120 s).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  int status = 0;
  bool exited = false;
  while (!std::filesystem::exists(state) && std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_FALSE(exited) << "papaya train ended before its first step";
  ASSERT_TRUE(std::filesystem::exists(state)) << "no state after 120 s";
  kill(pid, SIGTERM);
  while (!exited && std::chrono::steady_clock::now() < deadline + std::chrono::seconds(60)) {
    exited = waitpid(pid, &status, WNOHANG) == pid;
    if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "papaya train did not stop within 60 s of SIGTERM";
  }
  std::stringstream out, err;
  out << std::ifstream(dir.path("out")).rdbuf();
  err << std::ifstream(dir.path("err")).rdbuf();
  ASSERT_TRUE(WIFEXITED(status)) << err.str();
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << err.str();
  EXPECT_NE(err.str().find("stopped by SIGTERM after step"), std::string::npos) << err.str();
  const json report = json::parse(out.str());
  EXPECT_EQ(report.at("stopped_by"), "SIGTERM");
  const int done = report.at("steps_done").get<int>();
  EXPECT_GE(done, 1);
  EXPECT_EQ(report.at("losses").size(), static_cast<size_t>(done));

  const json rest = train_json("--resume " + state + " --steps " + std::to_string(done + 2));
  EXPECT_EQ(rest.at("first_step"), done);
  const auto losses = rest.at("losses").get<std::vector<double>>();
  ASSERT_EQ(losses.size(), static_cast<size_t>(done + 2));
  EXPECT_EQ(json(std::vector<double>(losses.begin(), losses.begin() + done)), report.at("losses"));
  // No temporary file is left beside the state.
  for (const auto& entry : std::filesystem::directory_iterator(dir.path(""))) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
  }
}

TEST(CliTrain, ALossThatIsNotFiniteStopsWithTheStepAndLayer) {
  expect_input_error("train --network gpt-tiny --batch 4 --steps 20 --lr 1e30", "training stopped at step ");
  expect_input_error("train --network gpt-tiny --batch 4 --steps 20 --lr 1e30", "layer '");
}

TEST(CliTrain, OneStepsFiguresAreRight) {
  const json one = train_json("--network mlp-tiny --batch 4 --steps 1");
  const json three = train_json("--network mlp-tiny --batch 4 --steps 3");
  EXPECT_GT(one.at("activation_bytes").get<int64_t>(), 0);
  EXPECT_EQ(one.at("static_bytes"), three.at("static_bytes"));
  EXPECT_EQ(one.at("activation_bytes"), three.at("activation_bytes"));
}

}  // namespace
}  // namespace papaya::testing
