#include "profiler/layer_facts.h"

#include <algorithm>
#include <map>
#include <stdexcept>

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

// The per-sample part of a size measured at batch 1 and at batch 2.
double growth(double at_1, double at_2) { return at_2 - at_1; }

const torch::Tensor& saved_tensor(const LayerCall& call, const std::string& slot) {
  for (const auto& [name, tensor] : call.saved) {
    if (name == slot) return tensor;
  }
  throw std::logic_error("slot " + slot + " not saved");
}

model::SavedTensorProfile describe_saved(const model::SlotDesc& slot, const torch::Tensor& at_1, const torch::Tensor& at_2,
                                         bool held_by_caller) {
  model::SavedTensorProfile s;
  s.slot = slot.name;
  s.kind = slot.kind;
  s.storage = slot.storage;
  s.dtype = dtype_name(at_1.scalar_type());
  s.element_size = static_cast<int>(at_1.element_size());
  s.per_sample = at_1.numel() != at_2.numel();
  s.numel_per_sample = s.per_sample ? growth(at_1.numel(), at_2.numel()) : static_cast<double>(at_1.numel());
  s.storage_bytes_per_sample = s.per_sample ? growth(storage_bytes(at_1), storage_bytes(at_2)) : storage_bytes(at_1);
  s.held_by_caller = held_by_caller;
  // The shape of one sample: the batch-1 shape, less its leading dimension
  // when that is the batch (a flattened batch-by-token dimension stays).
  s.sample_shape = at_1.sizes().vec();
  if (s.per_sample && at_1.dim() > 0 && at_1.size(0) == 1 && at_2.size(0) == 2) s.sample_shape.erase(s.sample_shape.begin());
  return s;
}

}  // namespace

std::vector<model::LayerProfile> describe_layers(executor::Network& network, const model::NetworkLayout& layout) {
  const std::vector<LayerCall> at_1 = record_calls(network, 1), at_2 = record_calls(network, 2);
  const std::vector<std::map<std::string, int>> last_use = last_forward_uses(network, 2);
  const std::vector<int64_t> copies = parameter_copy_bytes(network, 1);
  std::vector<model::LayerProfile> out;
  for (size_t i = 0; i < network.layers().size(); ++i) {
    const executor::Layer& layer = *network.layers()[i];
    const model::LayerDesc& desc = layout.layers.at(i);
    if (desc.path != layer.path()) throw std::logic_error("the layout does not list the layers in forward order");
    model::LayerProfile p;
    p.path = layer.path();
    p.kind = layer.kind();
    p.segment = layer.segment();
    p.output_saved_by = desc.output_saved_by;
    for (const auto& slot : desc.slots) {
      const auto& data = at_1[i].data_slots;
      p.saved.push_back(describe_saved(slot, saved_tensor(at_1[i], slot.name), saved_tensor(at_2[i], slot.name),
                                       std::find(data.begin(), data.end(), slot.name) != data.end()));
      p.saved.back().last_forward_use = network.layers().at(static_cast<size_t>(last_use[i].at(slot.name)))->path();
    }
    p.output_bytes_per_sample = growth(nbytes(at_1[i].output), nbytes(at_2[i].output));
    for (const auto& parameter : layer.parameters(/*recurse=*/false))
      p.parameter_bytes += static_cast<int64_t>(nbytes(parameter));
    p.parameter_copy_bytes = copies.at(i);
    const LayerCost cost_1 = forward_cost(layer, at_1[i]), cost_2 = forward_cost(layer, at_2[i]);
    p.forward_flops_per_sample = growth(cost_1.flops, cost_2.flops);
    p.forward_bytes_moved_per_sample = growth(cost_1.bytes_moved, cost_2.bytes_moved);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace papaya::profiler
