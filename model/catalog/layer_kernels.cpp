#include "model/catalog/layer_kernels.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace papaya::model {
namespace {

// A memory-bound kind's kernels in papaya's executor (LibTorch's eager
// operators) and the bytes they move over the layer's analytic bytes, each
// way: RMSNorm's forward is x², its mean, x·rstd and ·weight, its backward
// about twice those kernels over more bytes; LayerNorm and BatchNorm are one
// fused kernel each way (two with the statistics); an activation's backward
// reads its input and the gradient and writes one; softmax's backward two.
// Checked against an H200's per-layer times: bench/kernel_replay.sh.
struct Passes {
  int forward_kernels = 1;
  double forward_passes = 1;
  int backward_kernels = 1;
  double backward_passes = 1.5;
};

Passes passes_of(LayerKind kind) {
  using K = LayerKind;
  static const std::map<LayerKind, Passes> table = {
      {K::embedding, {1, 1, 3, 2}},       {K::position, {1, 1, 1, 1}},    {K::class_token, {1, 1, 1, 1}},
      {K::maxpool, {1, 1, 2, 1.5}},       {K::avgpool, {1, 1, 2, 1.5}},   {K::batchnorm, {2, 1.5, 2, 2.5}},
      {K::layernorm, {1, 1, 2, 2}},       {K::rmsnorm, {4, 2.5, 8, 9}},   {K::gelu, {1, 1, 1, 1.5}},
      {K::silu, {1, 1, 1, 1.5}},          {K::relu, {1, 1, 1, 1.5}},      {K::tanh, {1, 1, 1, 1.5}},
      {K::sigmoid, {1, 1, 1, 1.5}},       {K::dropout, {2, 1.5, 1, 1.5}}, {K::mul, {1, 1, 2, 2}},
      {K::clamped_swiglu, {5, 3, 10, 6}}, {K::rotary, {3, 3, 3, 3}},      {K::softmax, {1, 1, 2, 3}},
      {K::cross_entropy, {2, 1, 2, 1}},   {K::module, {1, 1, 2, 2}},
  };
  const auto it = table.find(kind);
  return it != table.end() ? it->second : Passes{};
}

const SavedTensorProfile* slot(const LayerDescription& layer, const std::string& name) {
  for (const auto& t : layer.saved) {
    if (t.slot == name && !t.sample_shape.empty()) return &t;
  }
  return nullptr;
}

double elements(const std::vector<int64_t>& shape) {
  double n = 1;
  for (int64_t d : shape) n *= static_cast<double>(d);
  return n;
}

// A product's FLOPs over its m·n·k: 2 (a multiply-add), plus what its kind
// computes per output beside (the head's log-softmax).
double flops_per_mnk(const LayerDescription& layer, double k) { return 2 + traits(layer.kind).flops_per_output / k; }

bool trains_weights(const LayerDescription& layer) { return layer.trainable_bytes() > 0 || layer.shared_trainable_bytes > 0; }

// rows x n x k forward; backward the input's gradient and the weight's,
// whose bias's sum and accumulation into the parameters' gradients are two
// small kernels more (the forward's bias one).
void add_dense(const LayerDescription& layer, double rows, double n, double k, LayerKernels& out) {
  out.forward.products.push_back({BatchDimension::rows, 1, rows, n, k});
  out.forward.pass_kernels += 1;
  out.backward.products.push_back({BatchDimension::rows, 1, rows, k, n});
  if (trains_weights(layer)) {
    out.backward.products.push_back({BatchDimension::depth, 1, n, k, rows});
    out.backward.pass_kernels += 2;
  }
}

// Where the shape cannot be read: the FLOPs at the products' ceiling.
void add_unshaped(const LayerDescription& layer, LayerKernels& out) {
  out.forward.unshaped_flops_per_sample += layer.forward_flops_per_sample;
  out.backward.unshaped_flops_per_sample +=
      layer.forward_flops_per_sample * (trains_weights(layer) ? traits(layer.kind).backward_flops_ratio : 1);
}

bool usable(double x) { return std::isfinite(x) && x >= 1; }

// An FP8 recipe's casts around a converted linear's products, in bytes read
// and written: an amax reduction reads an operand (2 bytes an element in
// bf16, 4 for the fp32 weight) and its cast reads it again and writes a
// byte. torchao's recipes cast the input and the weight forward and, in
// backward, the output's gradient in both orientations and the input and
// weight again; Transformer Engine's delayed scaling fuses the amax into
// the cast, casts the weight once (with its transpose) and reuses the
// forward's codes of the input in backward.
void add_fp8_casts(const LayerDescription& layer, Fp8Recipe recipe, double rows, double n, double k, LayerKernels& out) {
  const double inputs = rows * k, outputs = rows * n, weights = n * k;
  if (recipe == Fp8Recipe::delayed) {
    out.forward.pass_bytes_per_sample += 3 * inputs, out.forward.pass_bytes_fixed += 6 * weights;
    out.forward.pass_kernels += 2;
    out.backward.pass_bytes_per_sample += 3 * outputs, out.backward.pass_kernels += 1;
    return;
  }
  out.forward.pass_bytes_per_sample += 5 * inputs, out.forward.pass_bytes_fixed += 9 * weights;
  out.forward.pass_kernels += 4;
  out.backward.pass_bytes_per_sample += 5 * outputs, out.backward.pass_bytes_fixed += 9 * weights;
  out.backward.pass_kernels += 4;
  if (trains_weights(layer)) out.backward.pass_bytes_per_sample += 5 * outputs + 5 * inputs, out.backward.pass_kernels += 4;
}

void linear(const LayerDescription& layer, Fp8Recipe recipe, LayerKernels& out) {
  const SavedTensorProfile* input = slot(layer, "input");
  if (input == nullptr) return add_unshaped(layer, out);
  const double k = static_cast<double>(input->sample_shape.back());
  const double rows = elements(input->sample_shape) / k;
  const double n = layer.forward_flops_per_sample / (flops_per_mnk(layer, k) * rows * k);
  if (!usable(rows) || !usable(n) || !usable(k)) return add_unshaped(layer, out);
  add_dense(layer, rows, std::round(n), k, out);
  if (layer.kind == LayerKind::linear && recipe != Fp8Recipe::none &&
      runs_in_fp8(static_cast<int64_t>(k), static_cast<int64_t>(std::round(n)))) {
    for (DirectionWork* d : {&out.forward, &out.backward}) {
      for (ProductWork& p : d->products) p.fp8 = true;
    }
    add_fp8_casts(layer, recipe, rows, std::round(n), k, out);
  }
  if (layer.kind == LayerKind::lm_head) {
    // Log-softmax over the logits forward, its gradient backward (operands of
    // the products' width: the logits are the product's result).
    const double logits = rows * std::round(n) * input->element_size;
    out.forward.pass_bytes_per_sample += 2 * logits, out.forward.pass_kernels += 1;
    out.backward.pass_bytes_per_sample += 3 * logits, out.backward.pass_kernels += 1;
  }
}

// An implicit product: output pixels x output channels x (input channels ·
// kernel area), the output channels from the weights' count.
void convolution(const LayerDescription& layer, LayerKernels& out) {
  const SavedTensorProfile* input = slot(layer, "input");
  if (input == nullptr || layer.output_bytes_per_sample <= 0) return add_unshaped(layer, out);
  const double outputs = layer.output_bytes_per_sample / input->element_size;
  const double k = layer.forward_flops_per_sample / (2 * outputs);
  const double channels = std::round(static_cast<double>(layer.parameter_bytes) / 4 / k);
  const double pixels = outputs / channels;
  if (!usable(k) || !usable(channels) || !usable(pixels)) return add_unshaped(layer, out);
  add_dense(layer, pixels, channels, std::round(k), out);
}

// Unfused attention: a product per head, its two operands' gradients
// backward. Papaya's executor scales and masks the scores and groups the
// heads for shared k/v heads in three more passes each way; Megatron-LM
// scales them in the product (baddbmm's alpha) and masks them in its fused
// softmax, and repeats shared k/v heads to every query head (a pass over
// them, their gradients summed back in backward).
void attention_products(const LayerDescription& layer, Engine engine, LayerKernels& out) {
  const bool scores = layer.kind == LayerKind::attention_scores;
  const SavedTensorProfile* a = slot(layer, scores ? "q" : "probs");
  const SavedTensorProfile* b = slot(layer, scores ? "k" : "v");
  if (a == nullptr || b == nullptr || a->sample_shape.size() != 3 || b->sample_shape.size() != 3) {
    return add_unshaped(layer, out);
  }
  const double heads = static_cast<double>(a->sample_shape[0]), rows = static_cast<double>(a->sample_shape[1]);
  const double inner = static_cast<double>(a->sample_shape[2]);
  const double cols = static_cast<double>(scores ? b->sample_shape[1] : b->sample_shape[2]);
  out.forward.products.push_back({BatchDimension::count, heads, rows, cols, inner});
  out.backward.products.push_back({BatchDimension::count, heads, rows, inner, cols});
  out.backward.products.push_back({BatchDimension::count, heads, inner, cols, rows});
  if (engine == Engine::megatron) {
    const double shared_heads = static_cast<double>(b->sample_shape[0]);
    if (shared_heads >= heads) return;
    // Read once, written (backward: read and summed) for every query head.
    const double bytes = (shared_heads + heads) * elements({b->sample_shape[1], b->sample_shape[2]}) * b->element_size;
    for (DirectionWork* d : {&out.forward, &out.backward}) d->pass_bytes_per_sample += bytes, d->pass_kernels += 1;
    return;
  }
  if (scores) {
    out.forward.pass_bytes_per_sample += 6 * layer.output_bytes_per_sample, out.forward.pass_kernels += 3;
    out.backward.pass_bytes_per_sample += 6 * layer.output_bytes_per_sample, out.backward.pass_kernels += 3;
  }
}

void fused_attention(const LayerDescription& layer, LayerKernels& out) {
  const SavedTensorProfile* q = slot(layer, "q");
  if (q == nullptr || q->sample_shape.size() != 3) return add_unshaped(layer, out);
  for (DirectionWork* d : {&out.forward, &out.backward}) {
    d->attention_heads = static_cast<double>(q->sample_shape[0]);
    d->attention_query_tokens = static_cast<double>(q->sample_shape[1]);
  }
  out.forward.attention_flops_per_sample = layer.forward_flops_per_sample;
  out.backward.attention_flops_per_sample = layer.forward_flops_per_sample * traits(layer.kind).backward_flops_ratio;
}

double product_seconds(const ProductWork& p, double batch, const KernelModel& gpu, const MatmulPath& path, double bandwidth) {
  switch (p.grows) {
    case BatchDimension::rows: return matmul_seconds(gpu, path, batch * p.m, p.n, p.k, bandwidth);
    case BatchDimension::depth: return matmul_seconds(gpu, path, p.m, p.n, batch * p.k, bandwidth);
    case BatchDimension::count: return batched_matmul_seconds(gpu, path, batch * p.count, p.m, p.n, p.k, bandwidth);
  }
  return 0;
}

// One of the alike layers `layer` stands for.
LayerDescription one_of(const LayerDescription& layer) {
  LayerDescription one = layer;
  const double r = layer.repeats;
  one.repeats = 1;
  one.forward_flops_per_sample /= r, one.forward_bytes_moved_per_sample /= r;
  one.parameter_bytes /= layer.repeats, one.frozen_bytes /= layer.repeats;
  one.shared_trainable_bytes /= layer.repeats, one.parameter_copy_bytes /= layer.repeats;
  for (SavedTensorProfile& t : one.saved) t.numel_per_sample /= r, t.storage_bytes_per_sample /= r;
  return one;
}

}  // namespace

LayerKernels layer_kernels(const LayerDescription& layer, Fp8Recipe recipe, Engine engine) {
  if (layer.repeats > 1) {
    LayerKernels out = layer_kernels(one_of(layer), recipe, engine);
    out.forward.runs = out.backward.runs = layer.repeats;
    return out;
  }
  LayerKernels out;
  out.backward.backward = true;
  switch (layer.kind) {
    case LayerKind::linear:
    case LayerKind::lm_head: linear(layer, recipe, out); return out;
    case LayerKind::conv2d: convolution(layer, out); return out;
    case LayerKind::attention_scores:
    case LayerKind::attention_context: attention_products(layer, engine, out); return out;
    case LayerKind::fused_attention: fused_attention(layer, out); return out;
    default: break;
  }
  const Passes p = passes_of(layer.kind);
  out.forward.pass_bytes_per_sample = p.forward_passes * layer.forward_bytes_moved_per_sample;
  out.forward.pass_kernels = p.forward_kernels;
  out.backward.pass_bytes_per_sample = p.backward_passes * layer.forward_bytes_moved_per_sample;
  out.backward.pass_kernels = p.backward_kernels;
  if (layer.kind == LayerKind::embedding) out.backward.pass_bytes_fixed = 4 * static_cast<double>(layer.trainable_bytes());
  return out;
}

double kernel_seconds(const DirectionWork& work, double batch, const KernelModel& gpu, const MatmulPath& path, double bandwidth,
                      const std::optional<MatmulPath>& fp8) {
  double seconds = 0;
  for (const ProductWork& p : work.products) seconds += product_seconds(p, batch, gpu, p.fp8 && fp8 ? *fp8 : path, bandwidth);
  if (work.unshaped_flops_per_sample > 0) {
    seconds += batch * work.unshaped_flops_per_sample / (path.efficiency * path.peak_flops) + gpu.kernel_latency_s;
  }
  if (work.attention_flops_per_sample > 0) {
    seconds += attention_seconds(gpu, batch * work.attention_flops_per_sample, batch * work.attention_heads,
                                 work.attention_query_tokens, work.backward, path.peak_flops);
  }
  if (work.pass_kernels > 0) {
    // The bytes spread over the kind's kernels; each pays its latency.
    seconds += memory_pass_seconds(gpu, batch * work.pass_bytes_per_sample + work.pass_bytes_fixed, bandwidth) +
               (work.pass_kernels - 1) * gpu.kernel_latency_s;
  }
  return work.runs * seconds;
}

}  // namespace papaya::model
