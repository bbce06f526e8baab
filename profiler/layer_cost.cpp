#include "profiler/layer_cost.h"

#include <map>
#include <stdexcept>

#include "executor/layers/conv.h"

namespace papaya::profiler {
namespace {

double elements(const torch::Tensor& t) { return t.defined() ? static_cast<double>(t.numel()) : 0.0; }
double nbytes(const torch::Tensor& t) { return elements(t) * (t.defined() ? t.element_size() : 0); }

const torch::Tensor& saved_slot(const executor::Layer& layer, const LayerCall& call, const std::string& slot) {
  for (const auto& [name, tensor] : call.saved) {
    if (name == slot) return tensor;
  }
  throw std::logic_error("layer " + layer.path() + " saved no " + slot);
}

bool has_bias(const executor::Layer& layer) {
  const auto params = layer.named_parameters(/*recurse=*/false);
  return params.contains("bias") && params["bias"].defined();
}

double flops(const executor::Layer& layer, const LayerCall& call) {
  const std::string& kind = layer.kind();
  const double n = elements(call.output);
  const double bias = has_bias(layer) ? n : 0.0;
  if (kind == "linear") return 2.0 * static_cast<double>(call.inputs.at(0).size(-1)) * n + bias;
  if (kind == "conv2d") {
    const torch::Tensor weight = layer.named_parameters(/*recurse=*/false)["weight"];
    return 2.0 * static_cast<double>(weight.numel() / weight.size(0)) * n + bias;
  }
  if (kind == "attention_scores") return 2.0 * static_cast<double>(call.inputs.at(0).size(-1)) * n + n;
  if (kind == "attention_context") return 2.0 * static_cast<double>(call.inputs.at(0).size(-1)) * n;
  if (kind == "lm_head") {
    const double logits = elements(saved_slot(layer, call, "logprobs"));
    return 2.0 * static_cast<double>(call.inputs.at(0).size(-1)) * logits + 6.0 * logits;
  }
  if (kind == "cross_entropy") return 6.0 * elements(call.inputs.at(0));
  if (kind == "maxpool") {
    const double k = static_cast<double>(dynamic_cast<const executor::MaxPool2d&>(layer).kernel);
    return k * k * n;
  }
  if (kind == "avgpool") return elements(call.inputs.at(0));
  static const std::map<std::string, double> per_output = {
      {"softmax", 5}, {"gelu", 8},      {"silu", 4},    {"relu", 1},      {"dropout", 2},   {"mul", 1},
      {"position", 1}, {"layernorm", 8}, {"rmsnorm", 6}, {"batchnorm", 8}, {"embedding", 0}, {"class_token", 0}};
  const auto it = per_output.find(kind);
  if (it == per_output.end()) throw std::logic_error("no FLOP formula for layer kind " + kind + " (profiler/layer_cost.h)");
  return it->second * n;
}

double bytes_moved(const LayerCall& call) {
  const auto same_storage = [](const torch::Tensor& a, const torch::Tensor& b) {
    return a.defined() && b.defined() && a.storage().unsafeGetStorageImpl() == b.storage().unsafeGetStorageImpl();
  };
  double bytes = nbytes(call.output);
  for (const auto& input : call.inputs) bytes += nbytes(input);
  for (const auto& [slot, tensor] : call.saved) {
    bool seen = same_storage(tensor, call.output);
    for (const auto& input : call.inputs) seen = seen || same_storage(tensor, input);
    if (!seen) bytes += nbytes(tensor);
  }
  return bytes;
}

}  // namespace

LayerCost forward_cost(const executor::Layer& layer, const LayerCall& call) {
  return {flops(layer, call), bytes_moved(call)};
}

}  // namespace papaya::profiler
