#include "executor/torchscript/archive.h"

#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "model/error.h"

// A sanitizer's hook on an error it reports (a fuzzer sets it to write the
// input as a crash); absent in a build without one.
extern "C" void __sanitizer_set_death_callback(void (*callback)()) __attribute__((weak));

namespace papaya::executor::torchscript {
namespace {

constexpr char kExtraFile[] = "papaya.json";

// papaya.json's specs, checked: {"inputs": ["float32[B,3,64,64]", ...]}.
std::vector<model::InputSpec> specs_from_json(const Archive& archive) {
  const std::string where = archive.path + ": " + kExtraFile;
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(*archive.papaya_json);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(where + ": not JSON (" + e.what() + ")");
  }
  if (!doc.is_object()) throw InputError(where + ": expected an object {\"inputs\": [...]}");
  for (const auto& [key, value] : doc.items()) {
    if (key != "inputs") throw InputError(where + ": /" + key + ": unknown key (papaya.json holds \"inputs\")");
  }
  if (!doc.contains("inputs") || !doc.at("inputs").is_array()) {
    throw InputError(where + ": /inputs: expected an array of specs such as \"float32[B,3,224,224]\"");
  }
  std::vector<model::InputSpec> specs;
  const auto& inputs = doc.at("inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string at = where + " /inputs/" + std::to_string(i);
    if (!inputs[i].is_string()) throw InputError(at + ": expected a string such as \"float32[B,3,224,224]\"");
    specs.push_back(model::parse_input_spec(inputs[i].get<std::string>(), at));
  }
  return specs;
}

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

// `path` loaded into `module` (and its extra files): "" where it loads,
// else LibTorch's reason in one line.
std::string try_load(const std::string& path, torch::jit::Module& module, torch::jit::ExtraFilesMap& extra) {
  try {
    module = torch::jit::load(path, torch::kCPU, extra);
    return "";
  } catch (const c10::Error& e) {
    return first_line(e.what_without_backtrace());
  } catch (const std::exception& e) {  // the code's compiler reports errors as torch::jit::ErrorReport
    return first_line(e.what());
  }
}

std::string not_loadable(const std::string& path, const std::string& reason) {
  return path + ": not a TorchScript archive LibTorch can load (" + reason + ")";
}

// LibTorch's loader can crash on a damaged archive (a segfault parsing its
// code, as fuzzing found), so it first runs in a child process: a crash there
// is an InputError here, not papaya's end. The child reports through a pipe
// "L" where the load returned, else "E" and LibTorch's reason (a failed load
// also leaks LibTorch's zip reader, better in the child); no report means
// it died. Each version of a file that loads is checked once.
void check_loads_apart(const std::string& path) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  const auto written = std::filesystem::last_write_time(path, error);
  static std::mutex mutex;
  static std::set<std::tuple<std::string, uintmax_t, std::filesystem::file_time_type>> checked;
  const auto key = std::make_tuple(path, size, written);
  std::lock_guard<std::mutex> lock(mutex);
  if (error || checked.count(key)) return;
  int pipe_ends[2];
  if (::pipe(pipe_ends) != 0) return;  // no child to spare: loaded here alone
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(pipe_ends[0]);
    ::close(pipe_ends[1]);
    return;
  }
  if (child == 0) {
    ::close(pipe_ends[0]);
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
      const std::string reason = try_load(path, module, extra);
      report = reason.empty() ? "L" : "E" + reason;
    } catch (...) {
      report += "an exception of no standard type";
    }
    bool sent = true;
    for (size_t at = 0; sent && at < report.size();) {
      const ssize_t wrote = ::write(pipe_ends[1], report.data() + at, report.size() - at);
      sent = wrote > 0 || (wrote < 0 && errno == EINTR);
      if (wrote > 0) at += static_cast<size_t>(wrote);
    }
    // Straight out: _exit would run what a sanitizer hooks on it (a leak
    // check of the whole heap copied from the parent, a second or two).
    ::syscall(SYS_exit_group, sent ? 0 : 1);
  }
  ::close(pipe_ends[1]);
  // A child can be stuck from its start: a lock another thread held at the
  // fork stays held in it (a sanitizer's allocator, as fuzzing found). One
  // silent this long is ended, and the archive loaded here alone.
  constexpr int answer_ms = 20000;
  std::string report;
  char buffer[512];
  bool stuck = false;
  for (;;) {
    pollfd answer{pipe_ends[0], POLLIN, 0};
    const int ready = ::poll(&answer, 1, answer_ms);
    if (ready == 0) {
      stuck = true;
      break;
    }
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    const ssize_t got = ::read(pipe_ends[0], buffer, sizeof buffer);
    if (got > 0) {
      report.append(buffer, static_cast<size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(pipe_ends[0]);
  if (stuck) ::kill(child, SIGKILL);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (stuck) return;
  if (report.empty()) {
    const std::string how =
        WIFSIGNALED(status) ? std::string(::strsignal(WTERMSIG(status))) : "exit code " + std::to_string(WEXITSTATUS(status));
    throw InputError(path + ": LibTorch's loader crashes reading it (" + how +
                     "): the archive is damaged, or was not written by torch.jit.save");
  }
  if (report[0] == 'E') throw InputError(not_loadable(path, report.substr(1)));
  checked.insert(key);
}

// The bytes `t`'s sizes and strides reach into its storage.
int64_t reached_bytes(const torch::Tensor& t) {
  if (t.numel() == 0) return 0;
  int64_t last = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
  return (last + 1) * static_cast<int64_t>(t.element_size());
}

// LibTorch 1.13 loads a tensor whose sizes claim more than its storage holds
// (a damaged size in the pickle), and reads past the storage when it runs:
// every tensor the module holds is checked against its storage here.
void check_tensors_fit_storage(const Archive& archive) {
  for (const auto& attribute : archive.module.named_attributes(/*recurse=*/true)) {
    if (!attribute.value.isTensor()) continue;
    const torch::Tensor t = attribute.value.toTensor();
    if (!t.defined() || !t.has_storage()) continue;
    const int64_t holds = static_cast<int64_t>(t.storage().nbytes()), reached = reached_bytes(t);
    bool negative = t.storage_offset() < 0;
    for (int64_t d = 0; d < t.dim(); ++d) negative = negative || t.stride(d) < 0;
    if (negative || reached > holds) {
      throw InputError(archive.path + ": tensor " + attribute.name + " of shape " + c10::str(t.sizes()) + " reaches " +
                       std::to_string(reached) + " bytes of a storage of " + std::to_string(holds) + ": the archive is damaged");
    }
  }
}

}  // namespace

bool looks_like_archive(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 && magic[3] == 4;
}

Archive load_archive(const std::string& path) {
  if (!std::ifstream(path)) throw InputError(path + ": cannot read the file");
  if (!looks_like_archive(path)) throw InputError(path + ": not a TorchScript archive (no zip header)");
  Archive archive{path, torch::jit::Module(), std::nullopt};
  check_loads_apart(path);
  torch::jit::ExtraFilesMap extra{{kExtraFile, ""}};
  const std::string reason = try_load(path, archive.module, extra);
  if (!reason.empty()) throw InputError(not_loadable(path, reason));
  if (!extra.at(kExtraFile).empty()) archive.papaya_json = extra.at(kExtraFile);
  if (!archive.module.find_method("forward")) throw InputError(path + ": the module has no forward method");
  check_tensors_fit_storage(archive);
  return archive;
}

std::vector<ForwardArgument> forward_arguments(const Archive& archive) {
  std::vector<ForwardArgument> out;
  const auto& arguments = archive.module.get_method("forward").function().getSchema().arguments();
  for (size_t i = 1; i < arguments.size(); ++i) {  // after self
    const auto& a = arguments[i];
    out.push_back({a.name(), a.type()->annotation_str(), a.type()->kind() == c10::TypeKind::TensorType});
  }
  return out;
}

std::string forward_signature(const Archive& archive) {
  const auto& schema = archive.module.get_method("forward").function().getSchema();
  std::string out = "forward(";
  for (const auto& a : forward_arguments(archive)) out += (out.back() == '(' ? "" : ", ") + a.type + " " + a.name;
  out += ") -> ";
  const auto& returns = schema.returns();
  for (size_t i = 0; i < returns.size(); ++i) out += (i ? ", " : "") + returns[i].type()->annotation_str();
  return out;
}

std::vector<model::InputSpec> input_specs(const Archive& archive, const std::vector<std::string>& given,
                                          const std::string& given_as) {
  std::vector<model::InputSpec> specs;
  std::string source;
  if (!given.empty()) {
    source = given_as;
    for (const auto& text : given) specs.push_back(model::parse_input_spec(text, given_as));
  } else if (archive.papaya_json) {
    source = std::string(kExtraFile) + " /inputs";
    specs = specs_from_json(archive);
  } else {
    return specs;
  }
  const auto arguments = forward_arguments(archive);
  if (specs.size() != arguments.size()) {
    std::string names;
    for (const auto& a : arguments) names += (names.empty() ? "" : ", ") + a.name;
    throw InputError(archive.path + ": forward takes " + std::to_string(arguments.size()) + " input(s) (" + names + "), " +
                     source + " gives " + std::to_string(specs.size()));
  }
  for (const auto& a : arguments) {
    if (!a.tensor) {
      throw InputError(archive.path + ": forward's argument '" + a.name + "' has type " + a.type +
                       ", not Tensor: papaya feeds tensors only");
    }
  }
  return specs;
}

}  // namespace papaya::executor::torchscript
