#pragma once
// What papaya makes of a TorchScript module's hierarchy: the modules whose
// forward is called (prim::CallMethod) and calls no other become layers
// named by their path (layer1.0.conv1; imported_network.h); the ops a module
// runs outside its children's calls run between layers; the called children
// of Sequential and ModuleList containers become segments that can be
// recomputed.
#include <torch/script.h>

#include <cstdint>
#include <string>
#include <vector>

namespace papaya::executor::torchscript {

struct ModuleNode {
  std::string path;                  // "" for the top module
  std::string type;                  // its class, unqualified: "Linear"
  int64_t parameters = 0;            // its own, not its children's; a tensor shared with an earlier module counts there
  int calls = 0;                     // forward calls in one forward of the network (loops counted once)
  std::vector<std::string> own_ops;  // the distinct ops its forward runs outside its children ("aten::add")
  bool layer = false;
  bool segment = false;
};

struct ModuleTree {
  std::vector<ModuleNode> modules;  // depth first, as the module hierarchy lists them
  int64_t parameters = 0;           // every parameter, shared ones once
  int layers() const;               // each call of a layer module is one (imported_network.h)
  int segments() const;
};

// Whether a module's method of this name is its forward: "forward", or one
// of the overloads a scripted @overload forward compiles to ("forward__0",
// ...: nn.LSTM's, called with or without a state).
bool is_forward(const std::string& method);

// "layer1" and "0": "layer1.0"; "" and "head": "head".
std::string child_path(const std::string& parent, const std::string& name);

// InputError naming `label` where the forward calls none of the module's
// submodules (a frozen module or one optimized for inference: their calls
// are inlined, and papaya needs them).
ModuleTree module_tree(const torch::jit::Module& module, const std::string& label);

}  // namespace papaya::executor::torchscript
