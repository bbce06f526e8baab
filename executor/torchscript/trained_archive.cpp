#include "executor/torchscript/trained_archive.h"

#include <map>

#include "executor/torchscript/archive.h"
#include "model/error.h"
#include "model/json_file.h"

namespace papaya::executor::torchscript {

namespace {

// Each tensor of `into` (parameters or buffers, by dotted name) set to the
// one of that name in `from`, on the CPU in its own dtype.
template <typename NamedTensors>  // torch::jit::named_parameter_list or named_buffer_list
void copy_by_name(const NamedTensors& from_list, const NamedTensors& into, const std::string& what, const std::string& path) {
  std::map<std::string, at::Tensor> from;
  for (const auto& t : from_list) from.emplace(t.name, t.value);
  for (const auto& t : into) {
    const auto found = from.find(t.name);
    if (found == from.end() || !found->second.sizes().equals(t.value.sizes())) {
      throw InputError(path + ": the trained network has no " + what + " " + t.name + " of the archive's shape");
    }
    t.value.copy_(found->second.detach().to(torch::kCPU, t.value.scalar_type()));
  }
}

}  // namespace

void save_trained_archive(const std::string& source, const torch::jit::Module& trained, const std::string& path) {
  const Archive archive = load_archive(source);
  torch::jit::Module module = archive.module;
  {
    const torch::NoGradGuard no_grad;
    copy_by_name(trained.named_parameters(), module.named_parameters(), "parameter", path);
    copy_by_name(trained.named_buffers(), module.named_buffers(), "buffer", path);
  }
  torch::jit::ExtraFilesMap extra;
  if (archive.papaya_json) extra.emplace("papaya.json", *archive.papaya_json);
  model::write_file_atomically(path, [&](const std::string& temporary) {
    try {
      module.save(temporary, extra);
    } catch (const c10::Error& e) {
      throw InputError(path + ": cannot write (" + e.what_without_backtrace() + ")");
    }
  });
}

}  // namespace papaya::executor::torchscript
