#include "executor/torchscript/imported_network.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/saved_variable_hooks.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/runtime/graph_executor.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "executor/data.h"
#include "executor/layers/elementwise.h"
#include "executor/memory.h"
#include "executor/random_state.h"
#include "executor/storage/stored.h"
#include "executor/torchscript/archive.h"
#include "executor/torchscript/module_tree.h"
#include "model/error.h"

namespace papaya::executor::torchscript {
namespace {

const void* storage_of(const at::Tensor& t) { return t.storage().unsafeGetStorageImpl(); }

// What a saved tensor is, as the first forward on the device saw it. A
// floating tensor holding an infinity is kept as it is, as the norms'
// statistics are: a range codec cannot store it (GPU attention kernels save
// a log-sum-exp per query row, padded with +inf).
model::SlotKind slot_kind_of(const at::Tensor& t) {
  if (t.scalar_type() == at::kBool) return model::SlotKind::mask;
  if (!at::isFloatingType(t.scalar_type())) return model::SlotKind::index;
  return at::isinf(t).any().item<bool>() ? model::SlotKind::stats : model::SlotKind::activation;
}

// The module a call's path names ("layers.0#2.relu#3": layers.0.relu).
torch::jit::Module submodule(const torch::jit::Module& top, const std::string& path) {
  torch::jit::Module m = top;
  size_t start = 0;
  while (start < path.size()) {
    const size_t end = std::min(path.find('.', start), path.size());
    const std::string name = path.substr(start, end - start);
    m = m.attr(name.substr(0, name.find('#'))).toModule();
    start = end + 1;
  }
  return m;
}

// LibTorch's own keeping of a saved tensor (detached: the hook must not tie
// the graph to itself), or nothing where no backward will run.
struct KeptHooks : torch::autograd::SavedVariableHooks {
  explicit KeptHooks(bool keeps) : keeps(keeps) {}
  void call_pack_hook(const at::Tensor& tensor) override {
    if (keeps) kept = tensor.detach();
  }
  at::Tensor call_unpack_hook() override { return kept; }
  bool keeps;
  at::Tensor kept;
};

}  // namespace

// What the first forward found: the layers in the order they ran, and what each saved.
struct ImportedNetwork::Discovery {
  struct Found {
    std::string path;
    std::vector<Slot> slots;
    std::vector<at::Tensor> inputs, saved;  // of the call, to name the slots by
    at::Tensor output;
    at::Tensor first_input;  // the first tensor argument
  };
  std::vector<Found> layers;
  Found* open = nullptr;  // what saved tensors are charged to (saver_)
  struct FoundSegment {
    std::string path;
    torch::jit::Module module;
    size_t first_layer = 0;  // index of the first layer found inside it
    at::Tensor input;
  };
  std::vector<FoundSegment> segments;
};

// The tensors a layer saves: each slot reported to the observer and stored
// as its spec says; parameters and buffers kept as LibTorch keeps them.
struct LayerHooks : torch::autograd::SavedVariableHooks {
  LayerHooks(ModuleLayer& layer, const std::set<const void*>& held, bool keeps) : layer(layer), held(held), keeps(keeps) {}
  void call_pack_hook(const at::Tensor& tensor) override;
  at::Tensor call_unpack_hook() override { return stored ? stored->restore() : kept; }

  ModuleLayer& layer;
  const std::set<const void*>& held;
  bool keeps;
  at::Tensor kept;
  c10::intrusive_ptr<Stored> stored;
};

namespace {

// Appends each saved tensor to the open layer's slots (named at its end).
struct DiscoveryHooks : torch::autograd::SavedVariableHooks {
  DiscoveryHooks(ImportedNetwork::Discovery::Found& layer, const std::set<const void*>& held) : layer(layer), held(held) {}
  void call_pack_hook(const at::Tensor& tensor) override {
    if (held.count(storage_of(tensor))) return;
    layer.slots.push_back({"", slot_kind_of(tensor), ""});
    layer.saved.push_back(tensor);
  }
  at::Tensor call_unpack_hook() override { return {}; }
  ImportedNetwork::Discovery::Found& layer;
  const std::set<const void*>& held;
};

bool same_storage(const at::Tensor& a, const at::Tensor& b) { return b.defined() && storage_of(a) == storage_of(b); }

// The same values, not a part of them: ShuffleNet's block hands its first
// layer one half of its input (a view of the same storage), and recomputing
// it from that half would compute something else.
bool same_view(const at::Tensor& a, const at::Tensor& b) {
  return a.defined() && same_storage(a, b) && a.storage_offset() == b.storage_offset() && a.sizes().equals(b.sizes()) &&
         a.strides().equals(b.strides());
}

// "input", "input1", ... for a call's tensor arguments, "output" for its
// result, else "t<k>" (a tensor saved twice: the second is t<k>).
void name_slots(ImportedNetwork::Discovery::Found& layer) {
  const at::Tensor& output = layer.output;
  std::set<std::string> used;
  for (size_t k = 0; k < layer.slots.size(); ++k) {
    std::string name;
    for (size_t i = 0; i < layer.inputs.size() && name.empty(); ++i) {
      if (same_storage(layer.saved[k], layer.inputs[i])) name = i == 0 ? "input" : "input" + std::to_string(i);
    }
    if (name.empty() && same_storage(layer.saved[k], output)) name = "output";
    if (name.empty() || !used.insert(name).second) name = "t" + std::to_string(k);
    layer.slots[k].name = name;
  }
  layer.inputs.clear();
  layer.saved.clear();
  layer.output = at::Tensor();
}

}  // namespace

namespace {

model::LayerKind kind_of(const torch::jit::Module& module, const std::vector<Slot>& slots) {
  const std::string activation = routed_activation(module);
  if (activation.empty() || slots.size() != 1 || slots[0].name != "input") return model::LayerKind::module;
  return activation == "gelu" ? model::LayerKind::gelu : model::LayerKind::silu;
}

}  // namespace

ModuleLayer::ModuleLayer(const std::vector<Slot>& slots, torch::jit::Module module, ImportedNetwork& network)
    : Layer(kind_of(module, slots), slots), module_(std::move(module)), network_(network) {}

StoreSpec* ModuleLayer::inverted_output_spec() { return kind() == model::LayerKind::module ? nullptr : &output_spec_; }

torch::Tensor ModuleLayer::activation(const std::string& kind, const torch::Tensor& input) {
  if (inverted_output_spec() && uses_moms()) return moms::activation(*this, output_spec_, input);
  return plain_activation(kind, input);
}

std::vector<torch::Tensor> ModuleLayer::begin(std::vector<torch::Tensor> inputs) {
  std::vector<torch::Tensor*> pointers;
  for (auto& input : inputs) pointers.push_back(&input);
  network_.saver_ = this;
  saves_ = 0;
  scope_.emplace(*this, pointers);
  return inputs;
}

void ModuleLayer::saved(size_t slot, const torch::Tensor& tensor) const { scope_->saved(slots().at(slot).name, tensor); }

// The scope stays: what the code after the layer saves is reported through it.
torch::Tensor ModuleLayer::end(torch::Tensor output) { return scope_->finish(std::move(output)); }

namespace {

// The method a call of the module runs: its forward, else the first of the
// overloads a scripted @overload forward compiles to (nn.LSTM's forward__0,
// on a tensor) whose arguments after self are `tensors` tensors and then
// ones with defaults.
std::optional<torch::jit::Method> forward_taking(const torch::jit::Module& module, size_t tensors) {
  if (auto forward = module.find_method("forward")) return *forward;
  for (const auto& method : module.get_methods()) {
    if (!is_forward(method.name())) continue;
    const auto& arguments = method.function().getSchema().arguments();
    bool fits = arguments.size() > tensors;
    for (size_t i = 1; fits && i < arguments.size(); ++i) {
      fits = i <= tensors ? arguments[i].type()->kind() == c10::TypeKind::TensorType : arguments[i].default_value().has_value();
    }
    if (fits) return method;
  }
  return std::nullopt;
}

}  // namespace

bool ModuleLayer::runs_alone() const {
  const auto method = forward_taking(module_, 1);
  if (!method) return false;
  const CallArguments arguments = call_arguments(*method->graph());
  return arguments.tensors_only || arguments.constant;
}

namespace {

// The arguments of a call of `method` on `tensors`: the constants the
// network's calls pass besides them (call_arguments) in their places.
std::vector<torch::jit::IValue> call_on(const torch::jit::Method& method, const std::vector<torch::Tensor>& tensors) {
  const CallArguments arguments = call_arguments(*method.graph());
  if (arguments.tensors_only) return {tensors.begin(), tensors.end()};
  std::vector<torch::jit::IValue> out;
  size_t next = 0;
  for (const auto& value : arguments.values) {
    if (value) {
      out.push_back(*value);
    } else if (next < tensors.size()) {
      out.emplace_back(tensors[next++]);
    }
  }
  if (!arguments.constant || next != tensors.size()) {
    throw std::logic_error("a layer run alone whose calls pass other arguments than constants beside its tensors");
  }
  return out;
}

}  // namespace

torch::Tensor ModuleLayer::run(const std::vector<torch::Tensor>& inputs, const Batch& /*batch*/) {
  torch::jit::GraphOptimizerEnabledGuard optimizer(false);
  SaveHookGuard hooks(&network_);
  const auto method = forward_taking(module_, inputs.size());
  if (!method) throw InputError(network_.label_ + ": module " + path() + " has no forward that takes its tensors alone");
  const std::vector<torch::Tensor> in = begin(inputs);
  network_.failure_ = nullptr;
  torch::jit::IValue output;
  try {
    output = (*method)(call_on(*method, in));
  } catch (...) {
    if (network_.failure_) std::rethrow_exception(std::exchange(network_.failure_, nullptr));
    throw;
  }
  return end(output.isTuple() ? output.toTupleRef().elements()[0].toTensor()
                              : output.toTensor());  // its output (layer_markers.h)
}

void LayerHooks::call_pack_hook(const at::Tensor& tensor) {
  if (held.count(storage_of(tensor))) {
    kept = tensor.detach();
    return;
  }
  const size_t slot = layer.saves_++;
  if (slot >= layer.slots().size()) {
    // Thrown inside the interpreter, which rethrows it as its own error: kept to rethrow as it is.
    layer.network_.failure_ = std::make_exception_ptr(InputError(
        layer.network_.label_ + ": module " + layer.path() + " saved more tensors for backward than in the first forward (" +
        std::to_string(layer.slots().size()) + "): papaya needs each module to save the same ones every step"));
    std::rethrow_exception(layer.network_.failure_);
  }
  const StoreSpec& spec = layer.store_spec(slot);
  if (!keeps || spec.strategy.is_keep()) {
    // Reported as the zoo's layers report a tensor they keep (a stored form
    // reports itself), and with grad mode back on: autograd packs with it
    // off, and a save under it is one a backward will use (what
    // StoredBytesRecorder counts).
    const torch::AutoGradMode saving(true);
    layer.saved(slot, tensor);
  }
  if (!keeps) return;
  if (spec.strategy.is_keep()) {
    kept = tensor.detach();
  } else {
    stored = store(tensor.detach(), layer.slots()[slot].kind, spec);
  }
}

ImportedNetwork::ImportedNetwork(model::NetworkConfig config)
    : Network(std::move(config)),
      label_(this->config().torchscript().archive),
      labels_(at::detail::createCPUGenerator(kLabelSeed)) {
  module_ = load_archive(label_).module;
  module_tree(module_, label_);  // refuses a module whose calls are inlined
  mark_leaf_calls(module_, label_);
  const std::string& loss = this->config().torchscript().loss;
  if (!loss.empty()) asked_loss_ = parse_loss_kind(loss, label_ + ": loss");
  const Discovery found = discover(torch::kCPU);  // finds the loss's kind too
  for (const auto& layer : found.layers) {
    owned_.push_back(std::make_shared<ModuleLayer>(layer.slots, submodule(module_, layer.path), *this));
  }
  adopt_parameters();
  for (size_t i = 0; i < owned_.size(); ++i) register_module("layer" + std::to_string(i), owned_[i]);
  // A segment keeps its input, which its first layer saves as "input":
  // what the model counts a recomputed segment holding. Segments do not
  // nest: one inside another (MobileNet's blocks in its features) is not one.
  std::vector<std::string> segment_paths;
  const auto inside_another = [&](const std::string& path) {
    return std::any_of(segment_paths.begin(), segment_paths.end(),
                       [&](const std::string& outer) { return path.rfind(outer + ".", 0) == 0; });
  };
  for (const auto& s : found.segments) {
    if (inside_another(s.path)) continue;
    const bool saves_input =
        s.first_layer < found.layers.size() && found.layers[s.first_layer].path.rfind(s.path + ".", 0) == 0 &&
        !found.layers[s.first_layer].slots.empty() && found.layers[s.first_layer].slots.front().name == "input" &&
        same_view(found.layers[s.first_layer].first_input, s.input);
    if (!saves_input) continue;
    owned_segments_.push_back(std::make_shared<ImportedSegment>(s.module, *this));
    register_module("segment" + std::to_string(owned_segments_.size() - 1), owned_segments_.back());
    segment_paths.push_back(s.path);
  }
  index_paths();
  for (size_t i = 0; i < owned_.size(); ++i) {
    owned_[i]->set_path(found.layers[i].path);
    by_path_[found.layers[i].path] = owned_[i].get();
  }
  for (size_t i = 0; i < owned_segments_.size(); ++i) {
    owned_segments_[i]->set_path(segment_paths[i]);
    segments_by_path_[segment_paths[i]] = owned_segments_[i].get();
  }
  assign_segments();
}

namespace {

bool nondeterministic(const torch::jit::Block& block, std::set<const torch::jit::Graph*>& seen);

bool nondeterministic(torch::jit::Function* function, std::set<const torch::jit::Graph*>& seen) {
  torch::jit::GraphFunction* graph = function ? torch::jit::tryToGraphFunction(*function) : nullptr;
  return graph && seen.insert(graph->graph().get()).second && nondeterministic(*graph->graph()->block(), seen);
}

// Whether the code draws random numbers: a nondeterministic op (dropout in
// training, rand, bernoulli, ...) here or in a function or method it calls.
bool nondeterministic(const torch::jit::Block& block, std::set<const torch::jit::Graph*>& seen) {
  for (const torch::jit::Node* n : block.nodes()) {
    if (n->kind() == c10::prim::CallFunction) {
      const auto type = n->input(0)->type()->cast<c10::FunctionType>();
      if (type && nondeterministic(type->function(), seen)) return true;
    } else if (n->kind() == c10::prim::CallMethod) {
      const auto type = n->input(0)->type()->cast<c10::ClassType>();
      if (type && nondeterministic(type->findMethod(n->s(c10::attr::name)), seen)) return true;
    } else if (n->isNondeterministic()) {
      return true;
    }
    for (const torch::jit::Block* sub : n->blocks()) {
      if (nondeterministic(*sub, seen)) return true;
    }
  }
  return false;
}

}  // namespace

ImportedSegment::ImportedSegment(torch::jit::Module module, ImportedNetwork& network)
    : module_(std::move(module)), network_(network) {
  std::set<const torch::jit::Graph*> seen;
  draws_random_ = nondeterministic(&module_.get_method("forward").function(), seen);
}

std::vector<torch::Tensor> ImportedSegment::running_state() {
  std::vector<torch::Tensor> buffers;
  for (const auto& b : module_.buffers()) buffers.push_back(b);
  return buffers;
}

std::vector<torch::Tensor> ImportedSegment::weights() {
  std::vector<torch::Tensor> parameters;
  for (const auto& p : module_.parameters()) parameters.push_back(p);
  return parameters;
}

torch::Tensor ImportedSegment::forward(torch::Tensor x) {
  network_.saver_ = nullptr;  // what the segment's code saves before its first layer: LibTorch's
  torch::jit::GraphOptimizerEnabledGuard optimizer(false);
  MarkerSinkGuard markers(&network_);
  SaveHookGuard hooks(&network_);
  const ImportedNetwork::CallScope scope(network_);
  return run_segment_body(path(), module_, x);
}

ImportedNetwork::~ImportedNetwork() = default;

// Each tensor registered once, with the first layer that holds it, else
// with the network (a parent module's own parameters).
ImportedNetwork::Discovery ImportedNetwork::discover(torch::Device device) {
  held_.clear();
  for (const auto& p : module_.parameters()) held_.insert(storage_of(p));
  for (const auto& b : module_.buffers()) held_.insert(storage_of(b));
  discovery_ = std::make_unique<Discovery>();
  probe(make_synthetic_data(config(), device, 0)->next(config().smallest_batch()));
  close_found();
  Discovery found = std::move(*discovery_);
  discovery_.reset();
  discovered_on_ = device;
  return found;
}

void ImportedNetwork::to(torch::Device device, bool non_blocking) {
  Network::to(device, non_blocking);
  if (device == discovered_on_) return;
  const torch::Device before = discovered_on_;
  const Discovery found = discover(device);
  for (size_t i = 0; i < std::max(found.layers.size(), owned_.size()); ++i) {
    if (i >= found.layers.size() || i >= owned_.size() || found.layers[i].path != owned_[i]->path()) {
      throw InputError(label_ + ": on " + device.str() + " its forward runs other modules than on " + before.str() + " (module " +
                       (i < owned_.size() ? owned_[i]->path() : found.layers[i].path) +
                       "): papaya needs the same modules to run on every device");
    }
    owned_[i]->reset_slots(found.layers[i].slots);
  }
}

void ImportedNetwork::adopt_parameters() {
  std::set<const void*> adopted;
  const auto name_of = [](std::string name) {
    std::replace(name.begin(), name.end(), '.', '_');
    return name;
  };
  for (auto& layer : owned_) {
    for (const auto& p : layer->module_.named_parameters(/*recurse=*/false)) {
      if (adopted.insert(p.value.unsafeGetTensorImpl()).second)
        layer->register_parameter(p.name, p.value, p.value.requires_grad());
    }
    for (const auto& b : layer->module_.named_buffers(/*recurse=*/false)) {
      if (adopted.insert(b.value.unsafeGetTensorImpl()).second) layer->register_buffer(b.name, b.value);
    }
  }
  for (const auto& p : module_.named_parameters()) {
    if (adopted.insert(p.value.unsafeGetTensorImpl()).second)
      register_parameter(name_of(p.name), p.value, p.value.requires_grad());
  }
  for (const auto& b : module_.named_buffers()) {
    if (adopted.insert(b.value.unsafeGetTensorImpl()).second) register_buffer(name_of(b.name), b.value);
  }
}

torch::Tensor ImportedNetwork::forward(const Batch& batch) {
  torch::jit::GraphOptimizerEnabledGuard optimizer(false);
  MarkerSinkGuard markers(this);
  SaveHookGuard hooks(this);
  saver_ = nullptr;
  failure_ = nullptr;
  call_scopes_.assign(1, {});
  torch::jit::IValue output;
  try {
    run_users_code(
        label_, "forward at batch " + std::to_string(batch.input.size(0)),
        [&] { output = module_.forward(std::vector<torch::jit::IValue>(batch.arguments.begin(), batch.arguments.end())); },
        [this](const std::exception& e) { return failure_ || is_allocator_out_of_memory(e); });
  } catch (...) {
    saver_ = nullptr;
    if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
    throw;
  }
  // Under the save hook still: what the loss saves (cross-entropy's
  // log-probabilities) is the last layer's, as code between layers is.
  if (!loss_kind_) loss_kind_ = torchscript::loss_kind(output, asked_loss_, label_);
  return loss_of(output, *loss_kind_, labels_, batch.target, batch.rows, label_);
}

torch::Tensor ImportedNetwork::probe(const Batch& batch) {
  struct Restore {
    ImportedNetwork& network;
    bool training;
    std::vector<at::Tensor> buffers;
    RandomState random;
    at::Tensor labels;
    ~Restore() {
      set_generator_state(network.labels_, labels);
      torch::NoGradGuard no_grad;
      network.keeps_saved_ = true;
      network.module_.train(training);
      size_t i = 0;
      for (auto b : network.module_.buffers()) b.copy_(buffers[i++]);
      random.restore();
    }
  };
  std::vector<at::Tensor> buffers;
  for (const auto& b : module_.buffers()) buffers.push_back(b.clone());
  const at::Device device = batch.input.device();
  Restore restore{*this, module_.is_training(), std::move(buffers), RandomState::capture(device), generator_state(labels_)};
  torch::AutoGradMode grad(true);
  module_.train(true);
  keeps_saved_ = false;
  return forward(batch);
}

torch::Tensor ImportedNetwork::loss(const Batch& batch) {
  return torch::GradMode::is_enabled() ? forward(batch) : probe(batch).detach();
}

void ImportedNetwork::train(bool on) {
  Network::train(on);
  module_.train(on);
}

std::string ImportedNetwork::call_of(const std::string& path) {
  if (call_scopes_.empty()) call_scopes_.emplace_back();  // a layer run alone (a probe)
  const int k = ++call_scopes_.back()[path];
  return k == 1 ? path : path + "#" + std::to_string(k);
}

std::vector<torch::Tensor> ImportedNetwork::layer_begin(const std::string& path, std::vector<torch::Tensor> inputs) {
  try {
    open_call_ = call_of(path);
    if (discovery_) {
      close_found();
      discovery_->layers.push_back({open_call_, {}, inputs, {}, {}, inputs.empty() ? at::Tensor() : inputs.front()});
      discovery_->open = &discovery_->layers.back();
      return inputs;
    }
    const auto layer = by_path_.find(open_call_);
    if (layer == by_path_.end()) {
      throw InputError(label_ + ": module " + open_call_ +
                       " ran in this forward but not in the first one: papaya needs the same modules to run every step");
    }
    return layer->second->begin(std::move(inputs));
  } catch (...) {
    failure_ = std::current_exception();
    throw;
  }
}

torch::Tensor ImportedNetwork::layer_end(const std::string& /*path*/, torch::Tensor output) {
  try {
    if (discovery_) {
      discovery_->open->output = output;
      return output;
    }
    return by_path_.at(open_call_)->end(std::move(output));
  } catch (...) {
    failure_ = std::current_exception();
    throw;
  }
}

void ImportedNetwork::close_found() {
  if (!discovery_->open) return;
  name_slots(*discovery_->open);
  discovery_->open = nullptr;
}

// The running layer's (this is its module's forward); in a probe, which
// stores nothing, LibTorch's.
torch::Tensor ImportedNetwork::activation(const std::string& kind, torch::Tensor input) {
  return saver_ && keeps_saved_ ? saver_->activation(kind, input) : plain_activation(kind, input);
}

torch::Tensor ImportedNetwork::segment(const std::string& path, const torch::jit::Module& module, torch::Tensor input) {
  const std::string call = call_of(path);
  if (discovery_) {
    close_found();
    discovery_->segments.push_back({call, module, discovery_->layers.size(), input});
    const CallScope scope(*this);
    return run_segment_body(call, module, input);
  }
  const auto segment = segments_by_path_.find(call);
  if (segment == segments_by_path_.end()) {  // not one papaya recomputes
    const CallScope scope(*this);
    return run_segment_body(call, module, input);
  }
  return segment->second->run(std::move(input));
}

std::unique_ptr<torch::autograd::SavedVariableHooks> ImportedNetwork::hooks() {
  if (discovery_) {
    if (discovery_->open) return std::make_unique<DiscoveryHooks>(*discovery_->open, held_);
    return std::make_unique<KeptHooks>(false);
  }
  if (saver_) return std::make_unique<LayerHooks>(*saver_, held_, keeps_saved_);
  return keeps_saved_ ? nullptr : std::make_unique<KeptHooks>(false);
}

std::shared_ptr<Network> ArchiveSource::build() const { return std::make_shared<ImportedNetwork>(config_); }

model::NetworkConfig archive_config(const std::string& path, const std::vector<std::string>& given, const std::string& given_as,
                                    std::optional<LossKind> loss) {
  const Archive archive = load_archive(path);
  nlohmann::json inputs = nlohmann::json::array();
  for (const auto& spec : input_specs(archive, given, given_as)) inputs.push_back(spec.text());
  if (inputs.empty()) {
    throw InputError(path + ": the shapes of forward's inputs are not known: give them (" + forward_signature(archive) +
                     ") as input specs, or in the archive's papaya.json");
  }
  nlohmann::json doc = {{"name", std::filesystem::path(path).stem().string()},
                        {"family", "torchscript"},
                        {"archive", path},
                        {"inputs", inputs},
                        {"parameters", module_tree(archive.module, path).parameters}};
  if (loss) doc["loss"] = to_string(*loss);
  model::NetworkConfig config = model::parse_network_config(doc, path);
  config.source = path;
  return config;
}

}  // namespace papaya::executor::torchscript
