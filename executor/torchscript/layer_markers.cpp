#include "executor/torchscript/layer_markers.h"

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "executor/torchscript/module_tree.h"
#include "executor/torchscript/saved_tensors.h"
#include "model/error.h"

namespace papaya::executor::torchscript {
namespace {

using torch::jit::Block;
using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

thread_local MarkerSink* sink = nullptr;
// The path of the segment whose forward runs on this thread (the module
// hierarchy of its forward starts at it), "" outside one.
thread_local const std::string* prefix = nullptr;

// The path of the module whose graph runs the marker, joined to the site.
std::string callee_path(const std::string& site) {
  const std::string inner = module_path(torch::jit::currentModuleHierarchy());
  const std::string outer = prefix ? *prefix : "";
  return child_path(inner.empty() ? outer : child_path(outer, inner), site);
}

const c10::Symbol begin_symbol = c10::Symbol::fromQualString("papaya::layer_begin");
const c10::Symbol end_symbol = c10::Symbol::fromQualString("papaya::layer_end");
const c10::Symbol segment_symbol = c10::Symbol::fromQualString("papaya::segment");
const c10::Symbol activation_symbol = c10::Symbol::fromQualString("papaya::activation");

// Conservative aliasing: the interpreter neither reorders nor drops them.
torch::jit::RegisterOperators markers({
    torch::jit::Operator(
        "papaya::layer_begin(Tensor[] inputs, str site) -> Tensor[]",
        [](torch::jit::Stack& stack) {
          const std::string site = torch::jit::pop(stack).toStringRef();
          std::vector<at::Tensor> inputs = torch::jit::pop(stack).toTensorVector();
          if (sink) inputs = sink->layer_begin(callee_path(site), std::move(inputs));
          torch::jit::push(stack, std::move(inputs));
        },
        c10::AliasAnalysisKind::CONSERVATIVE),
    torch::jit::Operator(
        "papaya::layer_end(Tensor output, str site) -> Tensor",
        [](torch::jit::Stack& stack) {
          const std::string site = torch::jit::pop(stack).toStringRef();
          at::Tensor output = torch::jit::pop(stack).toTensor();
          if (sink) output = sink->layer_end(callee_path(site), std::move(output));
          torch::jit::push(stack, std::move(output));
        },
        c10::AliasAnalysisKind::CONSERVATIVE),
    torch::jit::Operator(
        "papaya::segment(Any module, Tensor input, str site) -> Tensor",
        [](torch::jit::Stack& stack) {
          const std::string site = torch::jit::pop(stack).toStringRef();
          at::Tensor input = torch::jit::pop(stack).toTensor();
          const torch::jit::Module module(torch::jit::pop(stack).toObject());
          const std::string path = callee_path(site);
          torch::jit::push(stack, sink ? sink->segment(path, module, std::move(input)) : run_segment_body(path, module, input));
        },
        c10::AliasAnalysisKind::CONSERVATIVE),
    torch::jit::Operator(
        "papaya::activation(Tensor input, str kind) -> Tensor",
        [](torch::jit::Stack& stack) {
          const std::string kind = torch::jit::pop(stack).toStringRef();
          at::Tensor input = torch::jit::pop(stack).toTensor();
          torch::jit::push(stack, sink ? sink->activation(kind, std::move(input)) : plain_activation(kind, input));
        },
        c10::AliasAnalysisKind::CONSERVATIVE),
});

bool is_tensor(const Value* v) { return v->type()->isSubtypeOf(*c10::TensorType::get()); }

// A tuple whose first element is a tensor (nn.MultiheadAttention's output
// and its optional weights).
bool leads_with_tensor(const Value* v) {
  const auto tuple = v->type()->cast<c10::TupleType>();
  return tuple && !tuple->elements().empty() && tuple->elements()[0]->isSubtypeOf(*c10::TensorType::get());
}

bool is_container(const torch::jit::Module& m) {
  const auto name = m.type()->name();
  const std::string type = name ? name->name() : "";
  return type == "Sequential" || type == "ModuleList" || type == "ModuleDict";
}

// Whether `method` of `m` calls a method of another module, itself or
// through another method of `m` (SqueezeExcitation's forward calls its
// _scale, which calls fc1 and fc2).
bool calls_modules(const torch::jit::Module& m, const std::string& method, int depth);

bool calls_modules(const torch::jit::Module& m, const Block& block, const Value* self, int depth) {
  for (const Node* n : block.nodes()) {
    if (n->kind() == c10::prim::CallMethod) {
      if (n->input(0) != self || calls_modules(m, n->s(c10::attr::name), depth + 1)) return true;
    }
    for (const Block* sub : n->blocks()) {
      if (calls_modules(m, *sub, self, depth)) return true;
    }
  }
  return false;
}

bool calls_modules(const torch::jit::Module& m, const std::string& method, int depth) {
  const auto function = m.find_method(method);
  if (!function || depth > 16) return false;
  const Graph& g = *function->graph();
  return calls_modules(m, *g.block(), g.inputs()[0], depth);
}

bool is_leaf(const torch::jit::Module& m, const std::string& forward) { return !calls_modules(m, forward, 0); }

// What the marked calls of each method pass besides their tensors
// (call_arguments), by the method's graph, held weakly: a graph of an
// archive let go is no longer one of them, whatever new graph takes its
// address.
struct CalledGraph {
  std::weak_ptr<const Graph> graph;
  CallArguments arguments;
};

std::vector<CalledGraph>& called_graphs() {
  static std::vector<CalledGraph> graphs;
  return graphs;
}

// What `call` passes after self: nullopt for a tensor, the value of a
// constant; `constant` false where an argument is computed at run time.
CallArguments arguments_of(const Node* call) {
  CallArguments out;
  for (size_t i = 1; i < call->inputs().size(); ++i) {
    const Value* v = call->input(i);
    if (is_tensor(v)) {
      out.values.emplace_back();
      continue;
    }
    out.tensors_only = false;
    const auto value = torch::jit::toIValue(v);
    if (!value) out.constant = false;
    out.values.push_back(value);
  }
  return out;
}

// Adds `call`'s arguments to those of the method of `callee`: one call
// passing other constants, or values of its own, makes them not constant.
void note_arguments(const std::shared_ptr<const Graph>& callee, const Node* call) {
  auto& graphs = called_graphs();
  graphs.erase(std::remove_if(graphs.begin(), graphs.end(), [](const CalledGraph& g) { return g.graph.expired(); }),
               graphs.end());
  CallArguments arguments = arguments_of(call);
  for (CalledGraph& known : graphs) {
    if (known.graph.lock() != callee) continue;
    if (known.arguments.values != arguments.values) known.arguments.constant = false;
    known.arguments.tensors_only = known.arguments.tensors_only && arguments.tensors_only;
    return;
  }
  graphs.push_back({callee, std::move(arguments)});
}

void mark(Graph& g, Node* call, const std::string& site) {
  std::vector<Value*> tensors;
  std::vector<size_t> positions;
  for (size_t i = 1; i < call->inputs().size(); ++i) {
    if (!is_tensor(call->input(i))) continue;
    tensors.push_back(call->input(i));
    positions.push_back(i);
  }
  torch::jit::WithInsertPoint point(call);
  Value* name = g.insertConstant(site);
  Value* list = g.insertNode(g.createList(c10::TensorType::get(), tensors))->output();
  Node* begin = g.insertNode(g.create(begin_symbol, {list, name}, 1));
  begin->output()->setType(c10::ListType::ofTensors());
  Node* unpack = g.insertNode(g.createListUnpack(begin->output(), tensors.size()));
  for (size_t k = 0; k < positions.size(); ++k) call->replaceInput(positions[k], unpack->output(k));
  if (is_tensor(call->output())) {
    Node* end = g.create(end_symbol, {call->output(), name}, 1);
    end->insertAfter(call);
    end->output()->setType(call->output()->type());
    call->output()->replaceAllUsesAfterNodeWith(end, end->output());
    return;
  }
  // A tuple: its first tensor is the layer's output, the tuple made again around it.
  Node* elements = g.createTupleUnpack(call->output());
  elements->insertAfter(call);
  Node* end = g.create(end_symbol, {elements->output(0), name}, 1);
  end->insertAfter(elements);
  end->output()->setType(elements->output(0)->type());
  std::vector<Value*> marked(elements->outputs().begin(), elements->outputs().end());
  marked[0] = end->output();
  const auto tuple = call->output()->type()->expect<c10::TupleType>();
  Node* again = g.createTuple(marked, tuple->schema() ? tuple : nullptr);
  again->insertAfter(end);
  call->output()->replaceAllUsesAfterNodeWith(again, again->output());
}

void mark_segment(Graph& g, Node* call, const std::string& site) {
  torch::jit::WithInsertPoint point(call);
  Value* name = g.insertConstant(site);
  Node* segment = g.insertNode(g.create(segment_symbol, {call->input(0), call->input(1), name}, 1));
  segment->output()->setType(call->output()->type());
  call->output()->replaceAllUsesWith(segment->output());
  call->destroy();
}

// The activation a leaf module's forward is, and nothing more: "gelu" for
// exact GELU of its input (aten::gelu, approximate "none", as nn.GELU
// scripts), "silu" for SiLU (aten::silu, or nn.SiLU's call of F.silu not in
// place), returned; "" for any other forward.
std::string activation_of(const Graph& g) {
  const Node* op = nullptr;
  for (const Node* n : g.nodes()) {
    if (n->kind() == c10::prim::Constant) continue;
    if (op) return "";
    op = n;
  }
  if (!op || g.inputs().size() != 2 || g.outputs().size() != 1 || op->output() != g.outputs()[0]) return "";
  const Value* x = g.inputs()[1];
  const auto constant = [](const Value* v) { return torch::jit::toIValue(v); };
  if (op->kind() == c10::aten::gelu && op->inputs().size() == 2 && op->input(0) == x) {
    const auto approximate = constant(op->input(1));
    return approximate && approximate->isString() && approximate->toStringRef() == "none" ? "gelu" : "";
  }
  if (op->kind() == c10::aten::silu && op->inputs().size() == 1 && op->input(0) == x) return "silu";
  if (op->kind() == c10::prim::CallFunction && op->inputs().size() == 3 && op->input(1) == x) {
    const auto function = op->input(0)->type()->cast<c10::FunctionType>();
    const auto in_place = constant(op->input(2));
    const bool f_silu = function && function->function()->qualname().qualifiedName() == "__torch__.torch.nn.functional.silu";
    return f_silu && in_place && in_place->isBool() && !in_place->toBool() ? "silu" : "";
  }
  return "";
}

// The activation op of a leaf module's forward replaced by
// papaya::activation, which the sink runs as the plan says.
void route_activation(Graph& g, const std::string& kind) {
  Node* op = g.outputs()[0]->node();
  torch::jit::WithInsertPoint point(op);
  Value* name = g.insertConstant(kind);
  Node* activation = g.insertNode(g.create(activation_symbol, {g.inputs()[1], name}, 1));
  activation->output()->setType(op->output()->type());
  op->output()->replaceAllUsesWith(activation->output());
  op->destroy();
}

class Marker {
 public:
  explicit Marker(std::string label) : label_(std::move(label)) {}

  void walk(const torch::jit::Module& self, const std::string& method, const std::string& path) {
    const auto function = self.find_method(method);
    if (!function) return;
    Graph& g = *function->graph();
    if (!done_.insert(&g).second) return;
    struct Attr {
      std::string site;
      torch::jit::Module module;
      bool in_container = false;  // a child of a Sequential, ModuleList or ModuleDict
    };
    std::unordered_map<const Value*, Attr> module_of = {{g.inputs()[0], {"", self}}};
    std::vector<Node*> nodes;
    collect(*g.block(), nodes);
    for (Node* n : nodes) {
      if (n->kind() == c10::prim::GetAttr) {
        const auto owner = module_of.find(n->input(0));
        if (owner == module_of.end()) continue;
        const std::string name = n->s(c10::attr::name);
        if (!owner->second.module.hasattr(name)) continue;
        const c10::IValue child = owner->second.module.attr(name);
        if (child.isObject() && child.toObject()->type()->is_module()) {
          module_of[n->output()] = {child_path(owner->second.site, name), torch::jit::Module(child.toObject()),
                                    is_container(owner->second.module)};
        }
        continue;
      }
      if (n->kind() != c10::prim::CallMethod) continue;
      const auto callee = module_of.find(n->input(0));
      if (callee == module_of.end()) continue;
      const std::string name = n->s(c10::attr::name);
      const Attr& target = callee->second;
      const std::string target_path = child_path(path, target.site);
      if (!is_forward(name) || target.site.empty()) {
        walk(target.module, name, target_path);  // another method: its ops run in this module's call
      } else if (!is_leaf(target.module, name)) {
        // A segment runs its forward (run_segment_body), not an overload of it.
        const bool one_tensor = n->inputs().size() == 2 && is_tensor(n->input(1)) && is_tensor(n->output());
        walk(target.module, name, target_path);  // a segment's markers name paths from it (run_segment_body)
        if (target.in_container && one_tensor && name == "forward") mark_segment(g, n, target.site);
      } else {
        if (!is_tensor(n->output()) && !leads_with_tensor(n->output())) {
          throw InputError(label_ + ": module " + target_path + " returns " + n->output()->type()->repr_str() +
                           ": papaya makes a layer of each module that calls no other, and a layer returns a tensor "
                           "(or a tuple led by one)");
        }
        mark(g, n, target.site);
        const std::shared_ptr<Graph> leaf_graph = target.module.get_method(name).graph();
        Graph& leaf = *leaf_graph;
        note_arguments(leaf_graph, n);
        if (done_.insert(&leaf).second) {
          const std::string kind = activation_of(leaf);
          if (!kind.empty()) route_activation(leaf, kind);
        }
      }
    }
  }

 private:
  static void collect(Block& block, std::vector<Node*>& out) {
    for (Node* n : block.nodes()) {
      out.push_back(n);
      for (Block* sub : n->blocks()) collect(*sub, out);
    }
  }

  std::string label_;
  std::set<const Graph*> done_;
};

}  // namespace

at::Tensor run_segment_body(const std::string& path, const torch::jit::Module& module, const at::Tensor& input) {
  const std::string* outer = prefix;
  prefix = &path;
  try {
    at::Tensor output = torch::jit::Module(module).forward({input}).toTensor();
    prefix = outer;
    return output;
  } catch (...) {
    prefix = outer;
    throw;
  }
}

CallArguments call_arguments(const torch::jit::Graph& method) {
  for (const CalledGraph& known : called_graphs()) {
    if (known.graph.lock().get() == &method) return known.arguments;
  }
  return {};
}

at::Tensor plain_activation(const std::string& kind, const at::Tensor& input) {
  return kind == "gelu" ? at::gelu(input) : at::silu(input);
}

std::string routed_activation(const torch::jit::Module& leaf) {
  const auto forward = leaf.find_method("forward");
  if (!forward) return "";
  for (const Node* n : forward->graph()->nodes()) {
    if (n->kind() == activation_symbol) return torch::jit::toIValue(n->input(1))->toStringRef();
  }
  return "";
}

MarkerSinkGuard::MarkerSinkGuard(MarkerSink* next) : previous_(sink) { sink = next; }
MarkerSinkGuard::~MarkerSinkGuard() { sink = previous_; }

void mark_leaf_calls(torch::jit::Module& module, const std::string& label) { Marker(label).walk(module, "forward", ""); }

}  // namespace papaya::executor::torchscript
