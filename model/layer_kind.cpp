#include "model/layer_kind.h"

#include <map>

#include "model/error.h"

namespace papaya::model {
namespace {

struct Entry {
  const char* name;
  LayerKindTraits traits;
};

const std::map<LayerKind, Entry>& table() {
  using K = LayerKind;
  using S = SlotKind;
  using F = FlopsShape;
  // slots; invertible input, attention, saves log-probabilities, recomputes them; FLOPs shape, per output; stores
  // before its output
  static const std::map<LayerKind, Entry> entries = {
      {K::linear, {"linear", {{{"input", S::activation}}, false, false, false, false, F::matmul, 0, true}}},
      {K::embedding, {"embedding", {{{"ids", S::index}}, false, false, false, false, F::per_output, 0}}},
      {K::position, {"position", {{}, false, false, false, false, F::per_output, 1}}},
      {K::class_token, {"class_token", {{}, false, false, false, false, F::per_output, 0}}},
      {K::conv2d, {"conv2d", {{{"input", S::activation}}, false, false, false, false, F::convolution, 0, true}}},
      {K::maxpool, {"maxpool", {{{"input", S::activation}, {"indices", S::index}}, false, false, false, false, F::pooling, 0}}},
      {K::avgpool, {"avgpool", {{}, false, false, false, false, F::per_input, 1}}},
      // Normalise, scale, shift and the statistics.
      {K::batchnorm, {"batchnorm", {{{"input", S::activation}}, false, false, false, false, F::per_output, 8}}},
      {K::layernorm,
       {"layernorm",
        {{{"input", S::activation}, {"mean", S::stats}, {"rstd", S::stats}}, false, false, false, false, F::per_output, 8}}},
      {K::rmsnorm,
       {"rmsnorm",
        {{{"input", S::activation}, {"rstd", S::stats}, {"normalized", S::activation}},
         false,
         false,
         false,
         false,
         F::per_output,
         6}}},
      {K::gelu, {"gelu", {{{"input", S::activation}}, true, false, false, false, F::per_output, 8}}},
      {K::silu, {"silu", {{{"input", S::activation}}, true, false, false, false, F::per_output, 4}}},
      // Backward needs only the output's sign.
      {K::relu, {"relu", {{{"output", S::mask}}, false, false, false, false, F::per_output, 1}}},
      // Backward differentiates from the output: 1 - y^2.
      {K::tanh, {"tanh", {{{"output", S::activation}}, false, false, false, false, F::per_output, 5}}},
      // Backward differentiates from the output: y(1 - y).
      {K::sigmoid, {"sigmoid", {{{"output", S::activation}}, false, false, false, false, F::per_output, 4}}},
      {K::dropout, {"dropout", {{{"mask", S::mask}}, false, false, false, false, F::per_output, 2}}},
      {K::mul, {"mul", {{{"a", S::activation}, {"b", S::activation}}, false, false, false, false, F::per_output, 1, true}}},
      // Two clamps, the sigmoid's product and exponential, the shift and two products.
      {K::clamped_swiglu,
       {"clamped_swiglu",
        {{{"gate", S::activation}, {"up", S::activation}}, false, false, false, false, F::per_output, 10, true}}},
      // A multiply and a multiply-add per rotated output; saves nothing.
      {K::rotary, {"rotary", {{}, false, false, false, false, F::per_output, 3}}},
      // The scale is one more operation per score.
      {K::attention_scores,
       {"attention_scores", {{{"q", S::activation}, {"k", S::activation}}, false, true, false, false, F::matmul, 1, true}}},
      {K::softmax, {"softmax", {{{"output", S::activation}}, false, true, false, false, F::per_output, 5}}},
      {K::attention_context,
       {"attention_context", {{{"probs", S::activation}, {"v", S::activation}}, false, true, false, false, F::matmul, 0, true}}},
      // Per (query, key) pair: two products of head_dim multiply-adds and the online softmax's operations.
      {K::fused_attention,
       {"fused_attention",
        {{{"q", S::activation}, {"k", S::activation}, {"v", S::activation}, {"output", S::activation}, {"lse", S::stats}},
         false,
         true,
         false,
         false,
         F::attention,
         5,
         false,
         true,
         2.5}}},
      // Log-softmax and the gather of the targets' entries, per logit.
      {K::cross_entropy, {"cross_entropy", {{{"logprobs", S::activation}}, false, false, true, false, F::per_input, 6}}},
      {K::lm_head,
       {"lm_head", {{{"input", S::activation}, {"logprobs", S::activation}}, false, false, true, true, F::logits, 6}}},
      // Its slots vary: they are the layer's own (LayerDescription::saved).
      {K::module, {"module", {{}, false, false, false, false, F::per_output, 0, false, false}}},
  };
  return entries;
}

}  // namespace

std::vector<LayerKind> layer_kinds() {
  std::vector<LayerKind> kinds;
  for (const auto& [kind, entry] : table()) kinds.push_back(kind);
  return kinds;
}

const char* to_string(LayerKind kind) { return table().at(kind).name; }

LayerKind layer_kind_from_string(const std::string& text, const std::string& where) {
  for (const auto& [kind, entry] : table()) {
    if (text == entry.name) return kind;
  }
  throw InputError(where + ": unknown layer kind '" + text + "'");
}

const LayerKindTraits& traits(LayerKind kind) { return table().at(kind).traits; }

bool holds_logprobs(LayerKind kind, const std::string& slot) { return traits(kind).saves_logprobs && slot == "logprobs"; }

}  // namespace papaya::model
