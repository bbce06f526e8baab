#include "executor/torchscript/load_apart.h"

#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include "model/error.h"

// A sanitizer's hook on an error it reports (a fuzzer sets it to write the
// input as a crash); absent in a build without one.
extern "C" void __sanitizer_set_death_callback(void (*callback)()) __attribute__((weak));

namespace papaya::executor::torchscript {
namespace {

// LibTorch's messages run over lines (a backtrace, the code around an
// error, a leading blank line): the first line with words on it.
std::string first_line(const std::string& what) {
  size_t begin = 0;
  while (begin < what.size()) {
    const size_t end = std::min(what.find('\n', begin), what.size());
    const size_t text = what.find_first_not_of(" \t\r", begin);
    if (text < end) return what.substr(text, end - text);
    begin = end + 1;
  }
  return "no message";
}

// `path` loaded into `module` (and its extra files): "" where it loads, else
// LibTorch's reason in one line.
std::string load_or_reason(const std::string& path, torch::jit::Module& module, torch::jit::ExtraFilesMap& extra) {
  try {
    module = torch::jit::load(path, torch::kCPU, extra);
    return "";
  } catch (const c10::Error& e) {
    return first_line(e.what_without_backtrace());
  } catch (const std::exception& e) {  // the code's compiler reports errors as torch::jit::ErrorReport
    return first_line(e.what());
  }
}

// What a child that loaded the archive said before it ended: "L" where the
// load returned, else "E" and LibTorch's reason; nothing where it died.
// `stuck` where it was ended because it could never go on.
struct ChildEnd {
  std::string report;
  int status = 0;
  bool stuck = false;
};

// The child's side: loads `path`, reports through `out` and ends.
[[noreturn]] void load_and_report(const std::string& path, int out) {
  // Die of a fault as the fault, not through the handlers of the parent
  // (a sanitizer's, a fuzzer's) in this copy of it.
  for (const int fatal : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) std::signal(fatal, SIG_DFL);
  // A sanitizer that finds LibTorch's loader freeing what it never
  // allocated (a damaged archive, as fuzzing found) ends this child alone.
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(nullptr);
  torch::jit::Module module;
  torch::jit::ExtraFilesMap extra;
  std::string report = "E";
  try {
    const std::string reason = load_or_reason(path, module, extra);
    report = reason.empty() ? "L" : "E" + reason;
  } catch (...) {
    report += "an exception of no standard type";
  }
  bool sent = true;
  for (size_t at = 0; sent && at < report.size();) {
    const ssize_t wrote = ::write(out, report.data() + at, report.size() - at);
    sent = wrote > 0 || (wrote < 0 && errno == EINTR);
    if (wrote > 0) at += static_cast<size_t>(wrote);
  }
  // Straight out: _exit would run what a sanitizer hooks on it (a leak
  // check of the whole heap copied from the parent, a second or two).
  ::syscall(SYS_exit_group, sent ? 0 : 1);
  __builtin_unreachable();
}

// `path` loaded in a child, waited on until it reports and ends, or is seen
// twice a second apart unable to go on (then it is ended). None where no
// child can be made.
std::optional<ChildEnd> load_in_child(const std::string& path) {
  int pipe_ends[2];
  if (::pipe(pipe_ends) != 0) return std::nullopt;
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(pipe_ends[0]);
    ::close(pipe_ends[1]);
    return std::nullopt;
  }
  if (child == 0) {
    ::close(pipe_ends[0]);
    load_and_report(path, pipe_ends[1]);
  }
  ::close(pipe_ends[1]);
  ChildEnd end;
  char buffer[512];
  int seen_waiting = 0;
  for (;;) {
    pollfd answer{pipe_ends[0], POLLIN, 0};
    const int ready = ::poll(&answer, 1, /*ms=*/1000);
    if (ready == 0) {
      seen_waiting = waits_forever(child) ? seen_waiting + 1 : 0;
      if (seen_waiting == 2) {
        end.stuck = true;
        break;
      }
      continue;
    }
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    const ssize_t got = ::read(pipe_ends[0], buffer, sizeof buffer);
    if (got > 0) {
      end.report.append(buffer, static_cast<size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(pipe_ends[0]);
  if (end.stuck) ::kill(child, SIGKILL);
  while (::waitpid(child, &end.status, 0) < 0 && errno == EINTR) {
  }
  return end;
}

std::string not_loadable(const std::string& path, const std::string& reason) {
  return path + ": not a TorchScript archive LibTorch can load (" + reason + ")";
}

// The child reports through a pipe; a failed load also leaks LibTorch's zip
// reader, better in the child.
void check_loads_apart(const std::string& path) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  const auto written = std::filesystem::last_write_time(path, error);
  static std::mutex mutex;
  static std::set<std::tuple<std::string, uintmax_t, std::filesystem::file_time_type>> checked;
  const auto key = std::make_tuple(path, size, written);
  std::lock_guard<std::mutex> lock(mutex);
  if (error || checked.count(key)) return;
  // A stuck child is no answer about the archive: another is made, the
  // lock it waits on long let go. Stuck each time, or no child to spare:
  // the archive is loaded by the caller alone.
  constexpr int kChildren = 3;
  for (int made = 0; made < kChildren; ++made) {
    const std::optional<ChildEnd> end = load_in_child(path);
    if (!end) return;
    if (end->stuck) continue;
    if (end->report.empty()) {
      const int status = end->status;
      const std::string how =
          WIFSIGNALED(status) ? std::string(::strsignal(WTERMSIG(status))) : "exit code " + std::to_string(WEXITSTATUS(status));
      throw InputError(path + ": LibTorch's loader crashes reading it (" + how +
                       "): the archive is damaged, or was not written by torch.jit.save");
    }
    if (end->report[0] == 'E') throw InputError(not_loadable(path, end->report.substr(1)));
    checked.insert(key);
    return;
  }
}

}  // namespace

torch::jit::Module load_module(const std::string& path, torch::jit::ExtraFilesMap& extra) {
  check_loads_apart(path);
  torch::jit::Module module;
  const std::string reason = load_or_reason(path, module, extra);
  if (!reason.empty()) throw InputError(not_loadable(path, reason));
  return module;
}

bool waits_forever(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::ifstream status(proc + "/status");
  int threads = 0;
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Threads:", 0) == 0) threads = std::atoi(line.c_str() + 8);
  }
  long call = -1;  // "running" where it runs: no number
  std::ifstream(proc + "/syscall") >> call;
  return threads == 1 && call == SYS_futex;
}

}  // namespace papaya::executor::torchscript
