#include "tests/cli/run_papaya.h"

#include <sys/wait.h>
#include <unistd.h>

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

}  // namespace papaya::testing
