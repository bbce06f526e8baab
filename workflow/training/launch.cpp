#include "workflow/training/launch.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "executor/distributed/world.h"
#include "model/error.h"

namespace papaya::workflow {
namespace {

// This process's arguments, as it was started.
std::vector<std::string> own_arguments() {
  std::ifstream file("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::vector<std::string> arguments;
  for (size_t at = 0; at < all.size();) {
    const size_t end = all.find('\0', at);
    arguments.push_back(all.substr(at, end - at));
    at = end == std::string::npos ? all.size() : end + 1;
  }
  return arguments;
}

pid_t start_rank(const std::vector<std::string>& arguments, int rank, int nproc, int port) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  setenv("RANK", std::to_string(rank).c_str(), 1);
  setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
  setenv("WORLD_SIZE", std::to_string(nproc).c_str(), 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
  std::vector<char*> argv;
  for (const auto& a : arguments) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv("/proc/self/exe", argv.data());
  _exit(127);
}

std::string how_it_ended(int status) {
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

// SIGTERM to the ranks still running, SIGKILL to those left after a grace.
void end_ranks(std::vector<pid_t>& running) {
  for (pid_t pid : running) kill(pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!running.empty() && std::chrono::steady_clock::now() < deadline) {
    for (auto it = running.begin(); it != running.end();) {
      it = waitpid(*it, nullptr, WNOHANG) == *it ? running.erase(it) : it + 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (pid_t pid : running) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
}

}  // namespace

void launch_ranks(int nproc) {
  const std::vector<std::string> arguments = own_arguments();
  const int port = executor::free_loopback_port();
  std::vector<pid_t> running;
  for (int rank = 0; rank < nproc; ++rank) running.push_back(start_rank(arguments, rank, nproc, port));
  const std::vector<pid_t> ranks = running;
  while (!running.empty()) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) break;
    const auto it = std::find(running.begin(), running.end(), pid);
    if (it == running.end()) continue;
    running.erase(it);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
    // Every rank that has failed by now, in rank order (a killed rank's
    // peers fail too, a moment later), then the rest ended.
    std::map<int64_t, int> failed{{std::find(ranks.begin(), ranks.end(), pid) - ranks.begin(), status}};
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    for (auto other = running.begin(); other != running.end();) {
      int other_status = 0;
      if (waitpid(*other, &other_status, WNOHANG) == *other) {
        if (!WIFEXITED(other_status) || WEXITSTATUS(other_status) != 0) {
          failed[std::find(ranks.begin(), ranks.end(), *other) - ranks.begin()] = other_status;
        }
        other = running.erase(other);
      } else {
        ++other;
      }
    }
    const bool others_ended = !running.empty();
    end_ranks(running);
    std::string what;
    for (const auto& [rank, how] : failed)
      what += (what.empty() ? "" : ", ") + ("rank " + std::to_string(rank) + " " + how_it_ended(how));
    throw InputError("a job of " + std::to_string(nproc) + " ranks: " + what +
                     (others_ended ? "; the other ranks were ended" : ""));
  }
}

}  // namespace papaya::workflow
