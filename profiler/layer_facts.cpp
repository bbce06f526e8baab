#include "profiler/layer_facts.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

#include "profiler/forward_lifetimes.h"
#include "profiler/layer_calls.h"
#include "profiler/layer_cost.h"
#include "profiler/parameter_copies.h"

namespace papaya::profiler {
namespace {

std::string dtype_name(torch::ScalarType type) {
  switch (type) {
    case torch::kFloat: return "float32";
    case torch::kBFloat16: return "bfloat16";
    case torch::kHalf: return "float16";
    case torch::kDouble: return "float64";
    case torch::kBool: return "bool";
    case torch::kLong: return "int64";
    case torch::kInt: return "int32";
    case torch::kByte: return "uint8";
    default: return c10::toString(type);
  }
}

double nbytes(const torch::Tensor& t) { return t.defined() ? static_cast<double>(t.numel() * t.element_size()) : 0.0; }
double storage_bytes(const torch::Tensor& t) { return static_cast<double>(t.storage().nbytes()); }

// Sizes measured at the smallest batch s and at 2s.
struct Batches {
  int64_t s;
  // The per-sample part of a size.
  double growth(double at_s, double at_2s) const { return (at_2s - at_s) / static_cast<double>(s); }
};

const torch::Tensor& saved_tensor(const LayerCall& call, const std::string& slot) {
  for (const auto& [name, tensor] : call.saved) {
    if (name == slot) return tensor;
  }
  throw std::logic_error("slot " + slot + " not saved");
}

model::SavedTensorProfile describe_saved(const model::LayoutSlot& slot, const torch::Tensor& at_s, const torch::Tensor& at_2s,
                                         const Batches& b, bool held_by_caller) {
  model::SavedTensorProfile s;
  s.slot = slot.name;
  s.kind = slot.kind;
  s.storage = slot.storage;
  s.dtype = dtype_name(at_s.scalar_type());
  s.element_size = static_cast<int>(at_s.element_size());
  s.per_sample = at_s.numel() != at_2s.numel();
  s.numel_per_sample = s.per_sample ? b.growth(at_s.numel(), at_2s.numel()) : static_cast<double>(at_s.numel());
  s.storage_bytes_per_sample = s.per_sample ? b.growth(storage_bytes(at_s), storage_bytes(at_2s)) : storage_bytes(at_s);
  s.held_by_caller = held_by_caller;
  // The shape of one sample: less the leading dimension where that is the
  // batch; a flattened batch-by-token dimension is one sample's tokens.
  s.sample_shape = at_s.sizes().vec();
  if (s.per_sample && at_s.dim() > 0 && at_2s.size(0) == 2 * at_s.size(0)) {
    if (at_s.size(0) == b.s) {
      s.sample_shape.erase(s.sample_shape.begin());
    } else {
      s.sample_shape.front() /= b.s;
    }
  }
  return s;
}

}  // namespace

// Each saved tensor's view key (SavedTensorProfile::view): the first slot,
// in forward order, saving the same view of the same storage.
std::map<std::string, std::string> view_keys(const executor::Network& network, const std::vector<LayerCall>& calls) {
  using View = std::tuple<const void*, int64_t, std::vector<int64_t>, std::vector<int64_t>, torch::ScalarType>;
  std::map<View, std::string> first;
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < calls.size(); ++i) {
    for (const auto& [name, t] : calls[i].saved) {
      const View view{t.storage().unsafeGetStorageImpl(), t.storage_offset(), t.sizes().vec(), t.strides().vec(),
                      t.scalar_type()};
      const std::string key = model::tensor_key(network.layers()[i]->path(), name);
      out[key] = first.emplace(view, key).first->second;
    }
  }
  return out;
}

std::vector<model::LayerProfile> describe_layers(executor::Network& network, const model::NetworkLayout& layout) {
  const Batches b{network.config().smallest_batch()};
  const std::vector<LayerCall> at_s = record_calls(network, b.s), at_2s = record_calls(network, 2 * b.s);
  const std::map<std::string, std::string> views = view_keys(network, at_s);
  const std::vector<std::map<std::string, int>> last_use = last_forward_uses(network, 2 * b.s);
  const std::vector<int64_t> copies = parameter_copy_bytes(network, b.s);
  std::map<const void*, std::string> owners;  // each layer's own parameters, by tensor
  for (const executor::Layer* layer : network.layers()) {
    for (const auto& parameter : layer->parameters(/*recurse=*/false))
      owners.emplace(parameter.unsafeGetTensorImpl(), layer->path());
  }
  std::vector<model::LayerProfile> out;
  for (size_t i = 0; i < network.layers().size(); ++i) {
    const executor::Layer& layer = *network.layers()[i];
    const model::LayoutLayer& desc = layout.layers.at(i);
    if (desc.path != layer.path()) throw std::logic_error("the layout does not list the layers in forward order");
    model::LayerProfile p;
    p.path = layer.path();
    p.kind = layer.kind();
    p.segment = layer.segment();
    p.output_saved_by = desc.output_saved_by;
    for (const auto& slot : desc.slots) {
      const auto& data = at_s[i].data_slots;
      p.saved.push_back(describe_saved(slot, saved_tensor(at_s[i], slot.name), saved_tensor(at_2s[i], slot.name), b,
                                       std::find(data.begin(), data.end(), slot.name) != data.end()));
      p.saved.back().last_forward_use = network.layers().at(static_cast<size_t>(last_use[i].at(slot.name)))->path();
      const auto& after = at_s[i].after_forward_slots;
      p.saved.back().saved_after_forward = std::find(after.begin(), after.end(), slot.name) != after.end();
      p.saved.back().view = views.at(model::tensor_key(layer.path(), slot.name));
    }
    p.output_bytes_per_sample = b.growth(nbytes(at_s[i].output), nbytes(at_2s[i].output));
    for (const auto& parameter : layer.parameters(/*recurse=*/false)) {
      p.parameter_bytes += static_cast<int64_t>(nbytes(parameter));
      if (!parameter.requires_grad()) p.frozen_bytes += static_cast<int64_t>(nbytes(parameter));
    }
    for (const auto& parameter : layer.shared_parameters()) {
      if (parameter.requires_grad()) p.shared_trainable_bytes += static_cast<int64_t>(nbytes(parameter));
      const auto owner = owners.find(parameter.unsafeGetTensorImpl());
      if (owner != owners.end()) p.shares_weights_of = owner->second;
    }
    if (const executor::StoredWeight* stored = layer.stored_weight()) {
      p.parameter_bytes += stored->bytes();
      p.frozen_bytes += stored->bytes();
    }
    p.parameter_copy_bytes = copies.at(i);
    const LayerCost cost_s = forward_cost(layer, at_s[i]), cost_2s = forward_cost(layer, at_2s[i]);
    p.forward_flops_per_sample = b.growth(cost_s.flops, cost_2s.flops);
    p.forward_bytes_moved_per_sample = b.growth(cost_s.bytes_moved, cost_2s.bytes_moved);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace papaya::profiler
