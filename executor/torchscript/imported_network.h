#pragma once
// A TorchScript archive as one of the executor's networks, so that a
// Session, the trainer, the profiler and plans take it as they take the
// zoo's. Its layers are the calls of its leaf modules (layer_markers.h),
// named by module path, in the order a forward runs them; a module called k
// times in one forward (from several sites, in a loop, inside a module
// called twice) is k layers, "enc.0", "enc.0#2", ..., "enc.0#k", whose
// parameters are the module's one set (their gradients summed over the
// calls, as autograd sums them); a container's child called twice is two
// segments, and the calls inside a segment are numbered from its path
// ("layers.0#2.attn"). A layer's slots
// are the tensors autograd saves while it runs (parameters and buffers
// aside), seen through the engine's saved-variable hooks (saved_tensors.h),
// named "input" (its first tensor argument's storage; "input1", ... the
// others'), "output", else "t<k>" by the order they are saved: an
// activation, a mask (bool) or an index (integers). The ops of a module
// outside its children's calls (a residual sum, a functional activation)
// run between layers, and what they save is charged to the layer before
// them (in the same segment). The graph
// executor's optimizer is off on every forward: with it, from the second
// step the calls are fused into one differentiable graph and no saved
// tensor would be charged to its module. Its segments are the calls of
// container children that take one tensor and return one (layer_markers.h)
// whose first layer saves the segment's input as its "input": what a
// recomputed segment keeps.
#include <torch/script.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "executor/networks/network.h"
#include "executor/networks/network_source.h"
#include "executor/segment.h"
#include "executor/torchscript/layer_markers.h"
#include "executor/torchscript/saved_tensors.h"
#include "executor/torchscript/synthetic_data.h"

namespace papaya::executor::torchscript {

class ImportedNetwork;
struct LayerHooks;

// One leaf module's call. Its parameters are the module's own (shared with
// the archive's module, registered here so that the optimizer, the device
// moves and the profiler see them; a tensor shared with an earlier layer
// belongs to that one). Its kind is module, or gelu or silu where its module
// is that activation alone (layer_markers.h) and saves its input alone: then
// a plan may invert it as the zoo's activations are.
class ModuleLayer : public Layer {
 public:
  ModuleLayer(const std::vector<Slot>& slots, torch::jit::Module module, ImportedNetwork& network);

  // The module's forward on `inputs`, as the network's forward calls it.
  torch::Tensor run(const std::vector<torch::Tensor>& inputs, const Batch& batch) override;
  bool runs_alone() const override;
  StoreSpec* inverted_output_spec() override;

 private:
  friend class ImportedNetwork;
  friend struct LayerHooks;
  std::vector<torch::Tensor> begin(std::vector<torch::Tensor> inputs);
  void saved(size_t slot, const torch::Tensor& tensor) const;
  torch::Tensor end(torch::Tensor output);
  // Its module's activation op: papaya's (executor/layers/elementwise.h)
  // where its input is stored other than kept, else LibTorch's.
  torch::Tensor activation(const std::string& kind, const torch::Tensor& input);

  torch::jit::Module module_;
  StoreSpec output_spec_;  // inverted: how its output is stored
  ImportedNetwork& network_;
  std::optional<Scope> scope_;  // while its forward runs
  size_t saves_ = 0;            // slots saved in this call so far
};

// A container child's call, recomputed in backward where the plan says so
// (executor::Segment's checkpoint, running the child's forward again).
class ImportedSegment : public Segment {
 public:
  ImportedSegment(torch::jit::Module module, ImportedNetwork& network);
  // Whether its code runs a nondeterministic op (a dropout in training).
  bool draws_random() override { return draws_random_; }
  // Its modules' buffers (registered with the layers that hold them).
  std::vector<torch::Tensor> running_state() override;
  // Its modules' parameters (registered with the layers that hold them).
  std::vector<torch::Tensor> weights() override;

 protected:
  torch::Tensor forward(torch::Tensor x) override;

 private:
  torch::jit::Module module_;
  ImportedNetwork& network_;
  bool draws_random_;
};

class ImportedNetwork : public Network, MarkerSink, SaveHook {
 public:
  // Loads config.torchscript().archive, marks its layers and runs one
  // forward at its smallest batch (model::NetworkConfig) to find them, their
  // slots and the loss. InputError naming the archive for what papaya cannot train (see layer_markers.h,
  // module_tree.h, synthetic_data.h).
  explicit ImportedNetwork(model::NetworkConfig config);
  ~ImportedNetwork() override;

  // The forward's output made a loss (its LossKind). Without autograd (a
  // probe: executor/layout_probe.h), the forward runs as a training step's would,
  // so that its layers save what they save in training, and the network's
  // buffers and the random state are put back after.
  torch::Tensor loss(const Batch& batch) override;
  void train(bool on = true) override;
  // Moved as any module, then its layers found again on `device` (one
  // forward at the smallest batch): kernels of another device save other
  // tensors for backward (cuDNN's batch norm its workspace), and the
  // parameters' storages are new. InputError where other modules run there.
  using Network::to;
  void to(torch::Device device, bool non_blocking = false) override;

  LossKind loss_kind() const { return *loss_kind_; }
  // The archive's module as papaya runs it: its parameters and buffers are
  // the network's (trained in place), its code carries layer markers
  // (trained_archive.h writes the archive back without them).
  const torch::jit::Module& module() const { return module_; }

  std::vector<torch::Tensor> layer_begin(const std::string& path, std::vector<torch::Tensor> inputs) override;
  torch::Tensor layer_end(const std::string& path, torch::Tensor output) override;
  torch::Tensor segment(const std::string& path, const torch::jit::Module& module, torch::Tensor input) override;
  torch::Tensor activation(const std::string& kind, torch::Tensor input) override;
  std::unique_ptr<torch::autograd::SavedVariableHooks> hooks() override;

  struct Discovery;  // what the first forward found (imported_network.cpp)

 private:
  friend class ModuleLayer;
  friend class ImportedSegment;
  friend struct LayerHooks;
  // The forward and its loss (of the kind found in the first forward).
  torch::Tensor forward(const Batch& batch);
  // The forward as a training step runs it, saving nothing for a backward,
  // the buffers and the random state put back after.
  torch::Tensor probe(const Batch& batch);
  // One forward at the smallest batch on `device`, recording the layers
  // and what each saves (the parameters' and buffers' storages first).
  Discovery discover(torch::Device device);
  void adopt_parameters();
  // Discovery: the slots of the layer saved tensors were charged to, named
  // (a layer begins, a segment begins, the forward ends).
  void close_found();
  // The call of the module at `path` beginning now: `path` for its first in
  // the scope running (the forward, or the body of a segment's call), then
  // "path#2", "path#3", ...
  std::string call_of(const std::string& path);
  // A segment's body runs in a scope of its own (its calls are named from
  // its path), as in forward so in a recomputation.
  struct CallScope {
    explicit CallScope(ImportedNetwork& network) : network(network) { network.call_scopes_.emplace_back(); }
    ~CallScope() { network.call_scopes_.pop_back(); }
    CallScope(const CallScope&) = delete;
    CallScope& operator=(const CallScope&) = delete;
    ImportedNetwork& network;
  };

  torch::jit::Module module_;
  std::string label_;
  std::optional<LossKind> asked_loss_;  // --loss
  std::optional<LossKind> loss_kind_;   // set by the first forward
  at::Generator labels_;                // the loss's synthetic targets
  std::vector<std::shared_ptr<ModuleLayer>> owned_;
  std::vector<std::shared_ptr<ImportedSegment>> owned_segments_;
  std::map<std::string, ModuleLayer*> by_path_;
  std::map<std::string, ImportedSegment*> segments_by_path_;
  std::set<const void*> held_;            // the storages of parameters and buffers
  std::unique_ptr<Discovery> discovery_;  // while the layers are being found
  torch::Device discovered_on_ = torch::kCPU;
  // The layer the tensors autograd saves are charged to: the one running,
  // else the last that ran in this forward or segment (the code between
  // layers saves for its backward too: SqueezeExcitation's scale * input).
  ModuleLayer* saver_ = nullptr;
  bool keeps_saved_ = true;                              // false in a probe: nothing will run backward
  std::vector<std::map<std::string, int>> call_scopes_;  // each scope's calls so far, by module path
  std::string open_call_;                                // the layer call begun and not ended
  std::exception_ptr failure_;                           // thrown in a marker, rethrown past the interpreter
};

// A TorchScript network's config (model::TorchScriptConfig), built by loading
// its archive.
class ArchiveSource : public NetworkSource {
 public:
  explicit ArchiveSource(model::NetworkConfig config) : config_(std::move(config)) {}
  const model::NetworkConfig& config() const override { return config_; }
  std::shared_ptr<Network> build() const override;

 private:
  model::NetworkConfig config_;
};

// The config of the archive at `path`: its inputs (`given`, named
// `given_as` in errors, else its papaya.json), its loss (nullopt: from the
// output's shape), its parameters counted. InputError as load_archive and
// input_specs.
model::NetworkConfig archive_config(const std::string& path, const std::vector<std::string>& given, const std::string& given_as,
                                    std::optional<LossKind> loss);

}  // namespace papaya::executor::torchscript
