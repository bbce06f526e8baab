#include "executor/torchscript/saved_tensors.h"

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/saved_variable_hooks.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#include <mutex>
#include <set>
#include <tuple>

namespace papaya::executor::torchscript {

struct SavedTensorRecorder::State {
  std::set<const void*> parameters;                          // storages
  std::set<std::tuple<const void*, int64_t, int64_t>> seen;  // storage, offset, numel
  SavedBytes saved;

  void record(const at::Tensor& t) {
    const void* storage = t.storage().unsafeGetStorageImpl();
    if (parameters.count(storage)) return;
    if (!seen.insert({storage, t.storage_offset(), t.numel()}).second) return;
    saved.by_module[module_path(torch::jit::currentModuleHierarchy())] += static_cast<int64_t>(t.nbytes());
    ++saved.tensors;
  }
};

namespace {

thread_local SaveHook* active = nullptr;

// Keeps the tensor as the native path does; records it first.
struct RecordingHooks : torch::autograd::SavedVariableHooks {
  explicit RecordingHooks(SavedTensorRecorder::State& state) : state(state) {}
  void call_pack_hook(const at::Tensor& tensor) override {
    state.record(tensor);
    kept = tensor.detach();
  }
  at::Tensor call_unpack_hook() override { return kept; }

  SavedTensorRecorder::State& state;
  at::Tensor kept;
};

struct RecordingHook : SaveHook {
  explicit RecordingHook(SavedTensorRecorder::State& state) : state(state) {}
  std::unique_ptr<torch::autograd::SavedVariableHooks> hooks() override { return std::make_unique<RecordingHooks>(state); }
  SavedTensorRecorder::State& state;
};

struct HookEngine : torch::autograd::Engine {
  std::unique_ptr<torch::autograd::SavedVariableHooks> get_default_saved_variable_hooks() override {
    return active ? active->hooks() : nullptr;
  }
  static torch::autograd::Engine& get() {
    static HookEngine engine;
    return engine;
  }
};

void install_engine() {
  static std::once_flag once;
  std::call_once(once, [] { torch::autograd::set_default_engine_stub(&HookEngine::get); });
}

// Installed as the program starts, before any backward runs: LibTorch 2.x
// starts autograd's GPU threads once per process, for the engine that runs
// the first backward, and an engine installed after that has none (a
// backward on the GPU fails in the engine's ready_queue).
[[maybe_unused]] const bool engine_installed_at_start = (install_engine(), true);

}  // namespace

SaveHookGuard::SaveHookGuard(SaveHook* hook) : previous_(active) {
  install_engine();
  active = hook;
}

SaveHookGuard::~SaveHookGuard() { active = previous_; }

std::string module_path(const std::vector<std::string>& hierarchy) {
  std::string path;
  for (size_t i = 1; i < hierarchy.size(); ++i) {  // after TOP(...)
    const std::string& entry = hierarchy[i];
    const std::string name = entry.substr(0, entry.find('('));
    if (name == "SELF") continue;  // another method of the module above (Conv2d's _conv_forward)
    path += (path.empty() ? "" : ".") + name;
  }
  return path;
}

int64_t SavedBytes::total() const {
  int64_t sum = 0;
  for (const auto& [module, bytes] : by_module) sum += bytes;
  return sum;
}

SavedTensorRecorder::SavedTensorRecorder(const torch::jit::Module& module) : state_(std::make_unique<State>()) {
  for (const auto& p : module.parameters()) state_->parameters.insert(p.storage().unsafeGetStorageImpl());
  hook_ = std::make_unique<RecordingHook>(*state_);
  guard_ = std::make_unique<SaveHookGuard>(hook_.get());
}

SavedTensorRecorder::~SavedTensorRecorder() = default;

const SavedBytes& SavedTensorRecorder::saved() const { return state_->saved; }

}  // namespace papaya::executor::torchscript
