#include "tests/support/synthetic_profile.h"

#include <algorithm>
#include <cmath>

namespace papaya::testing {

model::SavedTensorProfile saved(const std::string& slot, model::SlotKind kind, double numel, int element_size,
                                const std::string& storage, std::vector<int64_t> sample_shape) {
  model::SavedTensorProfile t;
  t.slot = slot;
  t.kind = kind;
  t.dtype = element_size == 4 ? "float32" : element_size == 8 ? "int64" : element_size == 1 ? "bool" : "bfloat16";
  t.element_size = element_size;
  t.sample_shape = sample_shape.empty() ? std::vector<int64_t>{static_cast<int64_t>(numel)} : sample_shape;
  t.numel_per_sample = numel;
  t.storage = storage;
  t.storage_bytes_per_sample = numel * element_size;
  return t;
}

model::Profile make_profile(const ProfileSpec& spec) {
  model::Profile p;
  p.network = "synthetic";
  p.precision = "fp32";
  p.machine.device = spec.device;
  p.machine.device_name = spec.device_name;
  p.machine.memory_bytes = spec.memory_bytes;
  p.machine.threads = 1;
  p.machine.timing = "wall-clock";
  p.network_config = {{"name", p.network}};
  p.batches = spec.batches;
  p.codecs = spec.codecs;
  p.plan_steps = spec.plan_steps;
  p.h2d_bytes_per_s = p.d2h_bytes_per_s = spec.link_bytes_per_s;
  const auto bytes = [](const model::LinearCurve& c, double b) { return static_cast<int64_t>(std::llround(c.at(b))); };
  for (const auto& l : spec.layers) {
    model::LayerProfile layer;
    layer.path = l.path;
    layer.kind = model::layer_kind_from_string(l.kind, l.path);
    layer.segment = l.segment;
    layer.saved = l.saved;
    layer.output_saved_by = l.output_saved_by;
    layer.output_bytes_per_sample = l.output_bytes_per_sample;
    layer.parameter_bytes = l.parameter_bytes;
    layer.parameter_copy_bytes = l.parameter_copy_bytes;
    layer.forward_flops_per_sample = l.forward_flops_per_sample;
    layer.forward_bytes_moved_per_sample = l.forward_bytes_moved_per_sample;
    for (int batch : spec.batches) {
      const double b = batch;
      model::LayerMeasurement m;
      m.forward_s = l.forward_s.at(b);
      m.backward_s = l.backward_s.at(b);
      m.forward_start_bytes = m.forward_end_bytes = bytes(l.forward_start, b);
      m.forward_peak_bytes = bytes(l.forward_peak, b);
      m.backward_start_bytes = m.backward_end_bytes = bytes(l.backward_start, b);
      m.backward_peak_bytes = bytes(l.backward_peak, b);
      m.forward_gap_peak_bytes = bytes(l.forward_gap_peak.value_or(l.forward_start), b);
      m.backward_gap_peak_bytes = bytes(l.backward_gap_peak.value_or(l.backward_start), b);
      layer.measured.push_back(m);
    }
    p.layers.push_back(layer);
  }
  for (const auto& s : spec.segments) {
    model::SegmentProfile seg;
    seg.path = s.path;
    seg.input = s.input;
    seg.returns_last_layer_output = s.returns_last_layer_output;
    for (int batch : spec.batches) seg.recompute_s.push_back(s.recompute_s.at(batch));
    p.segments.push_back(seg);
  }
  for (int batch : spec.batches) {
    const double b = batch;
    model::IterationMeasurement it;
    it.batch = batch;
    it.steps = 5;
    it.optimizer_s = spec.optimizer_s.at(b);
    double layers = 0, top = 0;
    for (const auto& l : spec.layers) {
      it.forward_s += l.forward_s.at(b);
      it.backward_s += l.backward_s.at(b);
      layers += l.forward_s.at(b) + l.backward_s.at(b);
      top = std::max({top, l.forward_peak.at(b), l.backward_peak.at(b), l.forward_gap_peak.value_or(l.forward_start).at(b),
                      l.backward_gap_peak.value_or(l.backward_start).at(b)});
    }
    it.iteration_s = layers + it.optimizer_s + spec.rest_s.at(b);
    it.static_bytes = static_cast<int64_t>(spec.static_bytes);
    it.passes_peak_bytes = static_cast<int64_t>(std::llround(top + spec.unattributed_bytes));
    it.optimizer_peak_bytes = static_cast<int64_t>(std::llround(spec.static_bytes + spec.optimizer_step_bytes));
    it.peak_bytes = it.peak_reserved_bytes = std::max(it.passes_peak_bytes, it.optimizer_peak_bytes);
    it.forward_end_bytes = spec.layers.empty() ? 0 : bytes(spec.layers.back().forward_peak, b);
    p.iterations.push_back(it);
  }
  return p;
}

}  // namespace papaya::testing

namespace papaya::testing {

ProfileSpec gpt_like(int blocks) {
  using model::SlotKind;
  const double tokens = 16, d = 32, vocab = 64, heads = 2;
  const double act = tokens * d, hidden = 4 * act, scores = heads * tokens * tokens;
  ProfileSpec spec;
  spec.static_bytes = 1 << 20;
  spec.optimizer_s = {0, 0, 2e-3};
  spec.rest_s = {0, 1e-5, 1e-4};
  spec.codecs = {{1, 4e9, 8e9}, {2, 1e9, 2e9}, {4, 1.5e9, 3e9}, {8, 2e9, 4e9}};

  // (path, kind, slots, output bytes/sample, output saved by)
  struct Layer {
    std::string path, kind;
    std::vector<model::SavedTensorProfile> saved;
    double output = 0;
    std::vector<std::string> saved_by;
  };
  std::vector<Layer> layers;
  layers.push_back({"tok_emb", "embedding", {saved("ids", SlotKind::index, tokens, 8, "tok_emb:ids")}, 4 * act, {}});
  std::string residual = "";  // the storage of the residual stream entering a block
  for (int i = 0; i < blocks; ++i) {
    const std::string p = "blocks." + std::to_string(i) + ".";
    const std::string x = p + "ln1:input";
    layers.push_back({p + "ln1",
                      "layernorm",
                      {saved("input", SlotKind::activation, act, 4, x), saved("mean", SlotKind::stats, tokens, 4, p + "ln1:mean"),
                       saved("rstd", SlotKind::stats, tokens, 4, p + "ln1:rstd")},
                      4 * act,
                      {p + "attn.qkv:input"}});
    layers.push_back(
        {p + "attn.qkv", "linear", {saved("input", SlotKind::activation, act, 4, p + "attn.qkv:input")}, 12 * act, {}});
    layers.push_back({p + "attn.scores",
                      "attention_scores",
                      {saved("q", SlotKind::activation, act, 4, p + "attn.scores:q"),
                       saved("k", SlotKind::activation, act, 4, p + "attn.scores:k")},
                      4 * scores,
                      {}});
    // The context saves the softmax's output itself: one storage, two slots.
    layers.push_back({p + "attn.softmax",
                      "softmax",
                      {saved("output", SlotKind::activation, scores, 4, p + "attn.softmax:output")},
                      4 * scores,
                      {p + "attn.context:probs"}});
    layers.push_back({p + "attn.context",
                      "attention_context",
                      {saved("probs", SlotKind::activation, scores, 4, p + "attn.softmax:output"),
                       saved("v", SlotKind::activation, act, 4, p + "attn.context:v")},
                      4 * act,
                      {}});
    layers.push_back(
        {p + "attn.proj", "linear", {saved("input", SlotKind::activation, act, 4, p + "attn.proj:input")}, 4 * act, {}});
    layers.push_back({p + "attn.drop", "dropout", {saved("mask", SlotKind::mask, act, 1, p + "attn.drop:mask")}, 4 * act, {}});
    layers.push_back(
        {p + "ln2",
         "layernorm",
         {saved("input", SlotKind::activation, act, 4, p + "ln2:input"),
          saved("mean", SlotKind::stats, tokens, 4, p + "ln2:mean"), saved("rstd", SlotKind::stats, tokens, 4, p + "ln2:rstd")},
         4 * act,
         {}});
    layers.push_back(
        {p + "mlp.fc1", "linear", {saved("input", SlotKind::activation, act, 4, p + "mlp.fc1:input")}, 4 * hidden, {}});
    layers.push_back({p + "mlp.act",
                      "gelu",
                      {saved("input", SlotKind::activation, hidden, 4, p + "mlp.act:input")},
                      4 * hidden,
                      {p + "mlp.fc2:input"}});
    layers.push_back(
        {p + "mlp.fc2", "linear", {saved("input", SlotKind::activation, hidden, 4, p + "mlp.fc2:input")}, 4 * act, {}});
    spec.segments.push_back({"blocks." + std::to_string(i), saved("input", SlotKind::activation, act, 4, x), {0, 3e-4, 5e-5}});
  }
  layers.push_back(
      {"ln_f",
       "layernorm",
       {saved("input", SlotKind::activation, act, 4, "ln_f:input"), saved("mean", SlotKind::stats, tokens, 4, "ln_f:mean"),
        saved("rstd", SlotKind::stats, tokens, 4, "ln_f:rstd")},
       4 * act,
       {}});
  layers.push_back({"lm_head",
                    "lm_head",
                    {saved("input", SlotKind::activation, act, 4, "lm_head:input"),
                     saved("logprobs", SlotKind::activation, tokens * vocab, 4, "lm_head:logprobs",
                           {static_cast<int64_t>(tokens), static_cast<int64_t>(vocab)})},
                    4,
                    {}});
  layers.push_back({"loss_scale", "position", {}, 4, {}});

  // Keep figures: static + stored storages (from their first saver's forward
  // to its backward) + the layer's output (forward) or gradients (backward)
  // + a transient of half the output.
  double stored = 0;
  std::vector<double> stored_after_forward;
  for (const auto& l : layers) {
    for (const auto& t : l.saved) stored += t.storage == l.path + ":" + t.slot ? t.numel_per_sample * t.element_size : 0;
    stored_after_forward.push_back(stored);
  }
  double input = 4 * act;
  for (size_t j = 0; j < layers.size(); ++j) {
    const auto& l = layers[j];
    const std::string segment = l.path.rfind("blocks.", 0) == 0 ? l.path.substr(0, l.path.find('.', 7)) : "";
    LayerSpec s;
    s.path = l.path;
    s.kind = l.kind;
    s.segment = segment;
    s.saved = l.saved;
    s.output_saved_by = l.saved_by;
    s.output_bytes_per_sample = l.output;
    const double before = j == 0 ? 0 : stored_after_forward[j - 1];
    s.forward_start = {before + input, spec.static_bytes};
    s.forward_peak = {stored_after_forward[j] + input + 1.5 * l.output, spec.static_bytes};
    const double grad = 2 * l.output;
    s.backward_start = {stored_after_forward[j] + l.output, spec.static_bytes};
    s.backward_peak = {stored_after_forward[j] + l.output + grad + 0.5 * l.output, spec.static_bytes};
    const double flops = 2 * l.output * d / 4;
    s.forward_flops_per_sample = flops;
    s.forward_bytes_moved_per_sample = 2 * l.output + input;
    s.forward_s = {0, 2e-6 + l.output * 1e-9, 1e-5};
    s.backward_s = {0, 4e-6 + l.output * 2e-9, 2e-5};
    s.parameter_bytes = l.kind == "linear" ? static_cast<int64_t>(4 * d * d) : 0;
    spec.layers.push_back(s);
    input = l.output;
  }
  return spec;
}

}  // namespace papaya::testing
