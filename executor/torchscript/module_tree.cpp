#include "executor/torchscript/module_tree.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "model/error.h"

namespace papaya::executor::torchscript {
namespace {

using torch::jit::Block;
using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

bool is_container(const std::string& type) { return type == "Sequential" || type == "ModuleList" || type == "ModuleDict"; }

class Walker {
 public:
  explicit Walker(const torch::jit::Module& top) { index(top, ""); }

  // One forward (the method `forward`, or one of its overloads) of the
  // module at `path`, run `times` per network forward.
  void walk_forward(const std::string& path, const std::string& forward, int times, int depth) {
    ModuleNode& node = at(path);
    node.calls += times;
    const auto method = modules_.at(path).find_method(forward);
    if (!method) return;
    walk_graph(*method->graph(), path, times, depth);
  }

  std::vector<ModuleNode> nodes() const {
    std::vector<ModuleNode> out;
    for (const auto& path : order_) out.push_back(nodes_.at(path));
    return out;
  }
  int64_t parameters() const { return parameters_; }
  // The modules whose forward `path`'s forward calls.
  std::set<std::string> callees(const std::string& path) const {
    const auto it = callees_.find(path);
    return it == callees_.end() ? std::set<std::string>{} : it->second;
  }
  bool any_called() const { return !callees_.empty(); }

 private:
  void index(const torch::jit::Module& m, const std::string& path) {
    order_.push_back(path);
    modules_.emplace(path, m);
    ModuleNode node;
    node.path = path;
    node.type = m.type()->name() ? m.type()->name()->name() : "?";
    for (const auto& p : m.named_parameters(/*recurse=*/false)) {
      if (seen_.insert(p.value.unsafeGetTensorImpl()).second) node.parameters += p.value.numel();
    }
    parameters_ += node.parameters;
    nodes_.emplace(path, node);
    for (const auto& child : m.named_children()) index(child.value, child_path(path, child.name));
  }

  ModuleNode& at(const std::string& path) { return nodes_.at(path); }

  void walk_graph(const Graph& graph, const std::string& path, int times, int depth) {
    std::unordered_map<const Value*, std::string> module_of = {{graph.inputs()[0], path}};
    walk_block(*graph.block(), path, module_of, times, depth);
  }

  void walk_block(const Block& block, const std::string& path, std::unordered_map<const Value*, std::string>& module_of,
                  int times, int depth) {
    for (const Node* n : block.nodes()) {
      const auto kind = n->kind();
      if (kind == c10::prim::GetAttr) {
        const auto owner = module_of.find(n->input(0));
        const std::string child = owner == module_of.end() ? "" : child_path(owner->second, n->s(c10::attr::name));
        if (owner != module_of.end() && modules_.count(child)) module_of[n->output()] = child;
        continue;
      }
      if (kind == c10::prim::CallMethod) {
        const auto callee = module_of.find(n->input(0));
        const std::string method = n->s(c10::attr::name);
        if (callee != module_of.end() && callee->second != path && is_forward(method) && depth < 64) {
          callees_[path].insert(callee->second);
          walk_forward(callee->second, method, times, depth + 1);
        } else if (callee != module_of.end() && depth < 64) {
          // Another method of this module or of a child: its ops run here.
          const auto other = modules_.at(callee->second).find_method(method);
          if (other) walk_graph(*other->graph(), path, times, depth + 1);
        }
        continue;
      }
      for (const Block* sub : n->blocks()) walk_block(*sub, path, module_of, times, depth);
      if (kind.is_aten()) {
        auto& ops = at(path).own_ops;
        const std::string op = kind.toQualString();
        if (std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(op);
      }
    }
  }

  std::vector<std::string> order_;
  std::map<std::string, torch::jit::Module> modules_;
  std::map<std::string, ModuleNode> nodes_;
  std::set<const void*> seen_;
  std::map<std::string, std::set<std::string>> callees_;
  int64_t parameters_ = 0;
};

std::string parent_of(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

}  // namespace

bool is_forward(const std::string& method) {
  const std::string overload = "forward__";
  return method == "forward" || (method.size() > overload.size() && method.rfind(overload, 0) == 0 &&
                                 std::all_of(method.begin() + static_cast<std::ptrdiff_t>(overload.size()), method.end(),
                                             [](char c) { return c >= '0' && c <= '9'; }));
}

std::string child_path(const std::string& parent, const std::string& name) { return parent.empty() ? name : parent + "." + name; }

int ModuleTree::layers() const {
  int calls = 0;
  for (const auto& m : modules) calls += m.layer ? m.calls : 0;
  return calls;
}

int ModuleTree::segments() const {
  return static_cast<int>(std::count_if(modules.begin(), modules.end(), [](const ModuleNode& m) { return m.segment; }));
}

ModuleTree module_tree(const torch::jit::Module& module, const std::string& label) {
  Walker walker(module);
  walker.walk_forward("", "forward", 1, 0);
  ModuleTree tree{walker.nodes(), walker.parameters()};
  if (tree.modules.size() > 1 && !walker.any_called()) {
    throw InputError(label + ": forward calls none of its " + std::to_string(tree.modules.size() - 1) +
                     " submodules: a frozen module or one optimized for inference has them inlined; save the module "
                     "before torch.jit.freeze or optimize_for_inference");
  }
  std::map<std::string, const ModuleNode*> by_path;
  for (const auto& m : tree.modules) by_path[m.path] = &m;
  for (auto& m : tree.modules) {
    if (m.calls == 0) continue;
    m.layer = walker.callees(m.path).empty();
    // A child of a container, called through it (Sequential) or through its
    // list (ModuleList): a segment.
    m.segment = !m.path.empty() && is_container(by_path.at(parent_of(m.path))->type);
  }
  return tree;
}

}  // namespace papaya::executor::torchscript
