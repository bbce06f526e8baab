#pragma once
// Marks, in a TorchScript module's forward graphs, every call of a leaf
// module (one whose forward calls no other module): the call becomes
//   inputs' = papaya::layer_begin(its tensor arguments, site)
//   output  = the call on inputs'
//   output' = papaya::layer_end(output, site)
// and at run time the MarkerSink installed on the thread hears both with the
// called module's path: the caller's (the interpreter's module hierarchy)
// joined to the site, the callee's attribute path from the caller ("conv1",
// "layers.0"). Modules of one class share their graphs, so the paths are
// made at run time, not written into the graph. A module called more than
// once (from two sites, in a loop, inside a container called twice) gives
// the sink one path for every call: the sink numbers the calls. The sink
// may replace the tensors it is given (the profiler's backward markers).
// A leaf returning a tuple led by a tensor (nn.MultiheadAttention: its
// output and optional weights) has that first tensor marked as its output.
//
// Each call of a container's child (a Sequential's or ModuleList's: a ResNet
// block, a transformer layer) that takes one tensor and returns one becomes
//   output = papaya::segment(the child, its argument, site)
// and the sink runs it (SegmentBody, or a recomputation of it): a segment.
// Its calls are marked as well.
//
// A leaf module whose forward is exact GELU or SiLU of its input and nothing
// more (nn.GELU, nn.SiLU) has that op replaced by
//   output = papaya::activation(input, "gelu" | "silu")
// which the sink runs: as LibTorch does, or inverted (stored from its output)
// where the plan says so.
#include <torch/script.h>

#include <optional>
#include <string>
#include <vector>

namespace papaya::executor::torchscript {

class MarkerSink {
 public:
  virtual ~MarkerSink() = default;
  virtual std::vector<at::Tensor> layer_begin(const std::string& path, std::vector<at::Tensor> inputs) = 0;
  virtual at::Tensor layer_end(const std::string& path, at::Tensor output) = 0;
  virtual at::Tensor segment(const std::string& path, const torch::jit::Module& module, at::Tensor input) = 0;
  // A leaf module that is exact GELU or SiLU of its input runs this instead
  // (`kind` "gelu" or "silu"), inside the layer's markers.
  virtual at::Tensor activation(const std::string& kind, at::Tensor input) = 0;
};

// GELU or SiLU (`kind` as MarkerSink::activation's) as LibTorch computes it.
at::Tensor plain_activation(const std::string& kind, const at::Tensor& input);

// "gelu" or "silu" where mark_leaf_calls routed `leaf`'s forward through
// MarkerSink::activation, else "".
std::string routed_activation(const torch::jit::Module& leaf);

// What the calls mark_leaf_calls marked of the method of a graph pass
// besides their tensors (nn.MultiheadAttention's need_weights=False, a mask
// that is None): run with its tensors alone it would compute something else.
struct CallArguments {
  bool tensors_only = true;  // no call passes anything else
  bool constant = true;      // every call passes the same constants (`values`)
  // Each argument after self: nullopt at a tensor's place, else the constant.
  std::vector<std::optional<c10::IValue>> values;
};
CallArguments call_arguments(const torch::jit::Graph& method);

// The forward of the segment at `path`, run as the network's own forward
// runs it: the paths inside named from `path`.
at::Tensor run_segment_body(const std::string& path, const torch::jit::Module& module, const at::Tensor& input);

// Installs `sink` on this thread, restoring the previous one when it goes.
// Without one the markers pass their tensors through.
class MarkerSinkGuard {
 public:
  explicit MarkerSinkGuard(MarkerSink* sink);
  ~MarkerSinkGuard();
  MarkerSinkGuard(const MarkerSinkGuard&) = delete;
  MarkerSinkGuard& operator=(const MarkerSinkGuard&) = delete;

 private:
  MarkerSink* previous_;
};

// Rewrites every graph reachable from `module`'s forward, once each, before
// it first runs. InputError naming `label` and the module where a leaf
// module's forward returns anything but a tensor or a tuple led by one.
void mark_leaf_calls(torch::jit::Module& module, const std::string& label);

}  // namespace papaya::executor::torchscript
