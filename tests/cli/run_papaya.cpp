#include "tests/cli/run_papaya.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace papaya::testing {

Outcome run_papaya(const std::string& args) {
  char err_path[] = "/tmp/papaya-test-stderr-XXXXXX";
  const int fd = mkstemp(err_path);
  close(fd);
  const std::string command = std::string(PAPAYA_BINARY) + " " + args + " 2>" + err_path;
  Outcome run;
  FILE* pipe = popen(command.c_str(), "r");
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) run.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  run.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::stringstream err;
  err << std::ifstream(err_path).rdbuf();
  run.err = err.str();
  std::remove(err_path);
  return run;
}

TempDir::TempDir(const std::string& prefix)
    : dir_(std::filesystem::temp_directory_path() / (prefix + "-" + std::to_string(::getpid()))) {
  std::filesystem::create_directories(dir_);
}

TempDir::~TempDir() { std::filesystem::remove_all(dir_); }

void expect_input_error(const std::string& args, const std::string& needle) {
  const Outcome run = run_papaya(args);
  EXPECT_EQ(run.code, 2) << args << "\n" << run.out << run.err;
  EXPECT_EQ(run.err.rfind("papaya: error: ", 0), 0u) << args << "\n" << run.err;
  EXPECT_NE(run.err.find(needle), std::string::npos) << args << "\n" << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << args << "\n" << run.err;
}

std::string profiled_model(const TempDir& dir, const std::string& network) {
  const Outcome profiled = run_papaya("profile --network " + network + " --batch 1,2,4 --out " + dir.path("p.json"));
  EXPECT_EQ(profiled.code, 0) << profiled.err;
  const Outcome fitted = run_papaya("fit " + dir.path("p.json") + " --out " + dir.path("m.json"));
  EXPECT_EQ(fitted.code, 0) << fitted.err;
  return dir.path("m.json");
}

bool built_with_gloo() { return run_papaya("--version").out.find(", Gloo") != std::string::npos; }

}  // namespace papaya::testing
