#include "profiler/layer_cost.h"

#include <stdexcept>
#include <string>

#include "executor/layers/conv.h"
#include "executor/layers/fused_attention.h"

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

// The kind's formula (model/layer_kind.h) on the tensors of this call.
double flops(const executor::Layer& layer, const LayerCall& call) {
  const model::LayerKindTraits& kind = model::traits(layer.kind());
  const double n = elements(call.output);
  const double bias = has_bias(layer) ? n : 0.0;
  switch (kind.flops) {
    case model::FlopsShape::per_output: return kind.flops_per_output * n;
    case model::FlopsShape::per_input: return kind.flops_per_output * elements(call.inputs.at(0));
    case model::FlopsShape::matmul:
      return 2.0 * static_cast<double>(call.inputs.at(0).size(-1)) * n + kind.flops_per_output * n + bias;
    case model::FlopsShape::convolution: {
      const torch::Tensor weight = layer.named_parameters(/*recurse=*/false)["weight"];
      return 2.0 * static_cast<double>(weight.numel() / weight.size(0)) * n + bias;
    }
    case model::FlopsShape::logits: {
      const double logits = elements(saved_slot(layer, call, "logprobs"));
      return 2.0 * static_cast<double>(call.inputs.at(0).size(-1)) * logits + kind.flops_per_output * logits;
    }
    case model::FlopsShape::pooling: {
      const double k = static_cast<double>(dynamic_cast<const executor::MaxPool2d&>(layer).kernel);
      return k * k * n;
    }
    case model::FlopsShape::attention: {
      const torch::Tensor& q = call.inputs.at(0);
      const double rows = elements(q) / static_cast<double>(q.size(-1)), keys = static_cast<double>(call.inputs.at(1).size(-2));
      // Causal: query i attends keys 0..i, (keys + 1) / 2 of them on average;
      // within a window of w < keys, w·keys - w(w - 1)/2 in all, over keys rows.
      const auto& fused = dynamic_cast<const executor::FusedAttention&>(layer);
      const double w = static_cast<double>(fused.window);
      const double seen = !fused.causal ? keys : w > 0 && w < keys ? w - w * (w - 1) / (2 * keys) : (keys + 1) / 2;
      const double pairs = rows * seen;
      // q·k over q's dimensions, the weights times v over v's (latent attention's are fewer).
      const double value_dims = static_cast<double>(call.inputs.at(2).size(-1));
      return (2.0 * static_cast<double>(q.size(-1)) + 2.0 * value_dims + kind.flops_per_output) * pairs;
    }
  }
  throw std::logic_error("no FLOP formula for layer kind " + std::string(model::to_string(layer.kind())));
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

LayerCost forward_cost(const executor::Layer& layer, const LayerCall& call) { return {flops(layer, call), bytes_moved(call)}; }

}  // namespace papaya::profiler
