#pragma once
// Every tensor an autograd op saves for backward, seen as it is saved: an
// Engine subclass answers LibTorch's request for default saved-variable
// hooks (each SavedVariable asks the default engine; PyTorch's Python engine
// does the same) while a recorder is active on the thread, and the
// TorchScript module running is named by the interpreter's module hierarchy.
// The graph executor must not inline submodules for the names to hold past
// the first steps: run the module under
// torch::jit::GraphOptimizerEnabledGuard(false).
#include <torch/script.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace torch::autograd {
struct SavedVariableHooks;
}

namespace papaya::executor::torchscript {

// Asked for the hooks of every tensor an autograd op saves on this thread
// while installed (SaveHookGuard); nullptr: LibTorch keeps the tensor as it
// would without hooks.
class SaveHook {
 public:
  virtual ~SaveHook() = default;
  virtual std::unique_ptr<torch::autograd::SavedVariableHooks> hooks() = 0;
};

// Installs `hook` on this thread (after the engine that asks it), restoring
// the previous one when it goes.
class SaveHookGuard {
 public:
  explicit SaveHookGuard(SaveHook* hook);
  ~SaveHookGuard();
  SaveHookGuard(const SaveHookGuard&) = delete;
  SaveHookGuard& operator=(const SaveHookGuard&) = delete;

 private:
  SaveHook* previous_;
};

// The module path of a hierarchy as torch::jit::currentModuleHierarchy()
// gives it: {"TOP(Net)::forward", "layer1(Sequential)::forward",
// "0(Block)::forward"} is "layer1.0"; the top alone is ""; an entry "SELF"
// (a method calling another of its module's) adds nothing.
std::string module_path(const std::vector<std::string>& hierarchy);

// Bytes saved for backward during one forward, by the module that saved
// them. A tensor saved by several ops (a layer's output that the next layer
// saves as its input) counts once, where it was first saved; the module's
// parameters count nowhere (they are held anyway).
struct SavedBytes {
  std::map<std::string, int64_t> by_module;
  int64_t tensors = 0;
  int64_t total() const;
};

// While alive, records what this thread's autograd ops save, and keeps each
// tensor as LibTorch would (detached: the hook must not tie the graph to
// itself), so gradients are those of a run without it. One at a time per
// thread.
class SavedTensorRecorder {
 public:
  explicit SavedTensorRecorder(const torch::jit::Module& module);
  ~SavedTensorRecorder();
  SavedTensorRecorder(const SavedTensorRecorder&) = delete;
  SavedTensorRecorder& operator=(const SavedTensorRecorder&) = delete;

  const SavedBytes& saved() const;

  struct State;

 private:
  std::unique_ptr<State> state_;
  std::unique_ptr<SaveHook> hook_;
  std::unique_ptr<SaveHookGuard> guard_;
};

}  // namespace papaya::executor::torchscript
