#include "model/parallel/tensor_split.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "model/error.h"
#include "model/network_layout.h"
#include "model/parallel/sharding.h"

namespace papaya::model {
namespace {

// How Megatron-LM splits a linear layer across tensor-parallel ranks.
enum class Split { column, row, replicated };

Split split_of(const std::string& name) {
  static const std::set<std::string> column{"qkv", "q", "k", "v", "q_b", "kv_b", "fc1", "up"};
  if (column.count(name)) return Split::column;
  if (row_parallel(name)) return Split::row;
  return Split::replicated;  // a router, a shared expert's gate, a classifier
}

// The shares a layout gives one rank, and those of k/v heads.
struct Shares {
  double hidden = 1, width = 1, kv = 1, qkv = 1, tokens = 1;  // qkv: of a fused projection's columns
  int tensor = 1, expert = 1;
  bool gathers = false;  // the tokens split between the projections (sequence parallelism)

  Shares(const TransformerShape& s, const ParallelLayout& l)
      : tensor(l.tensor), expert(l.expert), gathers(l.sequence && l.tensor > 1) {
    tokens = 1.0 / l.context;
    hidden = (l.sequence ? 1.0 / l.tensor : 1.0) * tokens;
    const double kv_columns = std::max(1.0 / l.tensor, 1.0 / s.kv_heads);
    kv = kv_columns * tokens;
    qkv = (s.heads / static_cast<double>(l.tensor) + 2.0 * kv_columns * s.kv_heads) / (s.heads + 2.0 * s.kv_heads);
    width = tokens / l.tensor;
  }
  // Of a column-parallel projection's weights (`name`: its role).
  double columns(const std::string& name) const {
    return name == "qkv" ? qkv : name == "k" || name == "v" ? kv / tokens : 1.0 / tensor;
  }
};

bool is_norm(LayerKind kind) {
  return kind == LayerKind::layernorm || kind == LayerKind::rmsnorm || kind == LayerKind::batchnorm;
}

// One layer's share, and whether the stream leaves it at a block's width.
LayerShare share_of(const LayerDescription& layer, const Shares& s, bool& in_width) {
  LayerShare out;
  const std::string name = layer_role(layer.path);
  const bool expert = in_expert(layer.path);
  const double state = in_width ? s.width : s.hidden;
  const auto per_slot = [&](const std::function<double(const SavedTensorProfile&)>& f) {
    for (const auto& t : layer.saved) out.slots.push_back(t.per_sample ? f(t) : 1.0);
  };
  const size_t lora = name.find("_lora_");
  if (layer.kind == LayerKind::module) {
    throw InputError(layer.path + ": a TorchScript module's tensors cannot be split across tensor-parallel ranks");
  } else if (lora != std::string::npos) {
    // A LoRA adapter beside a projection: A takes the projection's input to
    // the rank, B the rank to its output; the split side is the base's.
    const bool column = split_of(name.substr(0, lora)) == Split::column;
    const std::string part = name.substr(lora + 6);
    const double input = part == "b" ? s.tokens : column ? s.hidden : s.width;
    const double output = part == "a" ? s.tokens : column ? s.width : s.hidden;
    out.parameters = (part == "a") == column ? 1.0 : 1.0 / s.tensor;
    out.output = part == "drop" ? input : output;
    out.compute = out.parameters * s.tokens;
    per_slot([&](const SavedTensorProfile&) { return input; });
    return out;
  } else if (layer.kind == LayerKind::linear) {
    const Split split = split_of(name);
    const double input = split == Split::row ? s.width : s.hidden;
    if (split == Split::replicated) {
      out.output = out.compute = s.hidden;
    } else {
      out.parameters = split == Split::column ? s.columns(name) : 1.0 / s.tensor;
      out.output = split == Split::column ? out.parameters * s.tokens : s.hidden;
      out.compute = out.parameters * s.tokens;
    }
    in_width = split == Split::column;
    if (split == Split::column && s.gathers) out.gathered_input = s.tokens;
    if (split == Split::row && s.gathers) out.summed_output = s.tokens;
    per_slot([&](const SavedTensorProfile&) { return input; });
  } else if (layer.kind == LayerKind::lm_head) {
    out.parameters = 1.0 / s.tensor;  // vocabulary-parallel
    out.output = out.compute = s.width;
    in_width = true;
    per_slot([&](const SavedTensorProfile& t) { return t.slot == "input" ? s.hidden : s.width; });
    out.backward_working = s.width;
    if (s.gathers) {
      out.gathered_input = s.tokens;
    } else {
      out.input_gradient = s.hidden;
    }
    return out;
  } else if (layer.kind == LayerKind::embedding) {
    out.parameters = 1.0 / s.tensor;  // vocabulary-parallel
    out.output = out.compute = s.hidden;
    in_width = false;
    per_slot([&](const SavedTensorProfile&) { return s.tokens; });  // every rank looks up its tokens' ids
  } else if (is_norm(layer.kind) || layer.kind == LayerKind::position || layer.kind == LayerKind::class_token) {
    in_width = false;
    out.output = out.compute = s.hidden;
    per_slot([&](const SavedTensorProfile&) { return s.hidden; });
  } else {
    // Between the projections: attention, activations, gates, dropout;
    // k/v tensors by the k/v heads a rank holds.
    const bool attention = traits(layer.kind).attention || layer.kind == LayerKind::rotary;
    const auto of_kv = [&](const std::string& slot) { return in_width && attention && (slot == "k" || slot == "v"); };
    out.output = out.compute = in_width && layer.kind == LayerKind::rotary && name == "rope_k" ? s.kv : state;
    per_slot([&](const SavedTensorProfile& t) -> double { return of_kv(t.slot) ? s.kv : state; });
  }
  if (expert) out.parameters /= s.expert;  // each rank holds experts/e experts, each e times the tokens
  // A row-parallel projection's backward makes its share of its input's and
  // its weights' gradients; its output's gradient, whole without sequence
  // parallelism, is there before it starts.
  const bool row = layer.kind == LayerKind::linear && split_of(name) == Split::row;
  out.backward_working = row ? out.compute : std::max(out.output, out.compute);
  for (double slot : out.slots) out.backward_working = std::max(out.backward_working, slot);
  return out;
}

// A tensor's shape per sample at `share` of its bytes: the dimension the
// split cuts divided where it divides evenly (heads lead an attention
// tensor, tokens every other), else left (the bytes carry the share).
std::vector<int64_t> split_shape(std::vector<int64_t> shape, double share) {
  if (share >= 1 || shape.empty()) return shape;
  const double parts = 1 / share;
  const auto whole = static_cast<int64_t>(std::llround(parts));
  if (std::abs(parts - static_cast<double>(whole)) > 1e-9) return shape;
  for (int64_t& d : shape) {
    if (d % whole == 0) {
      d /= whole;
      break;
    }
  }
  return shape;
}

// A fitted keep-step figure of which `described` bytes a sample are saved
// tensors (`described_rank` on the rank) and the rest live tensors of the
// pass (the stream in flight, its gradient) at `live` of their bytes, whose
// fixed part holds `fixed_shift` bytes more.
LinearCurve rescaled(const LinearCurve& c, double described, double described_rank, double live, double fixed_shift) {
  if (c.per_sample == 0 && c.fixed == 0) return c;  // not measured
  return {described_rank + (c.per_sample - described) * live, c.fixed + fixed_shift};
}

// `over` beyond `base` (a peak beyond the point it starts from), that part at `share`.
LinearCurve beyond(const LinearCurve& base_rank, const LinearCurve& base, const LinearCurve& over, double per_sample_share,
                   double fixed_share) {
  if (over.per_sample == 0 && over.fixed == 0) return over;
  return {base_rank.per_sample + (over.per_sample - base.per_sample) * per_sample_share,
          base_rank.fixed + (over.fixed - base.fixed) * fixed_share};
}

void scale_time(SaturatingCurve& c, double share) { c.per_sample *= share; }

int64_t scaled(int64_t bytes, double share) { return static_cast<int64_t>(std::llround(static_cast<double>(bytes) * share)); }

}  // namespace

std::string layer_role(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

bool row_parallel(const std::string& path) {
  static const std::set<std::string> row{"proj", "o", "fc2", "down"};
  return row.count(layer_role(path)) > 0;
}

bool in_mixture_of_experts(const std::string& path) { return path.find(".moe.") != std::string::npos; }

TransformerShape transformer_shape(const LayerModel& model, const std::string& label) {
  TransformerShape shape;
  std::map<std::string, int> experts;  // of the first block with experts
  for (const LayerFit& l : model.layers) {
    shape.blocks = std::max(shape.blocks, block_of_path(l.path) + 1);
    if ((l.kind == LayerKind::attention_scores || l.kind == LayerKind::fused_attention) && shape.heads == 0) {
      shape.fused_attention = l.kind == LayerKind::fused_attention;
      for (const auto& t : l.saved) {
        if (t.sample_shape.size() < 2) continue;
        if (t.slot == "q") shape.heads = static_cast<int>(t.sample_shape[0]), shape.tokens = static_cast<int>(t.sample_shape[1]);
        if (t.slot == "k") shape.kv_heads = static_cast<int>(t.sample_shape[0]);
      }
    }
    const std::string expert = expert_of_path(l.path);
    if (!expert.empty() && block_of_path(l.path) == block_of_path(experts.empty() ? l.path : experts.begin()->first)) {
      experts.emplace(expert, l.repeats);  // each of the experts a layer stands for
    }
  }
  if (shape.heads == 0) throw InputError(label + ": no attention layers: only a transformer's blocks split across GPUs");
  if (shape.kv_heads == 0) shape.kv_heads = shape.heads;
  for (const auto& [expert, count] : experts) shape.experts += count;
  return shape;
}

std::vector<LayerShare> layer_shares(const LayerModel& model, const TransformerShape& shape, const ParallelLayout& layout) {
  const Shares s(shape, layout);
  std::vector<LayerShare> out;
  bool in_width = false;
  for (const LayerFit& l : model.layers) out.push_back(share_of(l, s, in_width));
  return out;
}

LayerModel split_across_ranks(const LayerModel& whole, const TransformerShape& shape, const ParallelLayout& layout) {
  const std::vector<LayerShare> shares = layer_shares(whole, shape, layout);
  const Shares degrees(shape, layout);
  const double stream = degrees.hidden;
  // Unsplit, each rank runs the whole network: its measured figures (the
  // scratch and times where each layer was timed) hold as they are.
  if (degrees.tensor == 1 && degrees.expert == 1 && degrees.tokens == 1) return whole;
  LayerModel rank = whole;
  const size_t n = whole.layers.size();

  // Every storage's share: its first slot's.
  std::map<std::string, double> storage_share;
  for (size_t j = 0; j < n; ++j) {
    const auto& saved = whole.layers[j].saved;
    for (size_t k = 0; k < saved.size(); ++k) storage_share.emplace(saved[k].storage, shares[j].slots[k]);
  }
  // The storages each layer saves first: what is held from its forward on.
  std::vector<double> held_bytes(n, 0), held_rank(n, 0), copies(n, 0), copies_rank(n, 0);
  double all_bytes = 0, all_rank = 0;
  for (size_t j = 0; j < n; ++j) {
    const LayerFit& l = whole.layers[j];
    for (const auto& t : l.saved) {
      if (!t.per_sample || t.storage != tensor_key(l.path, t.slot)) continue;
      held_bytes[j] += t.storage_bytes_per_sample;
      held_rank[j] += t.storage_bytes_per_sample * storage_share[t.storage];
    }
    all_bytes += held_bytes[j], all_rank += held_rank[j];
    copies[j] = static_cast<double>(l.parameter_copy_bytes);
    copies_rank[j] = copies[j] * shares[j].parameters;
  }
  const double all_share = all_bytes > 0 ? all_rank / all_bytes : 1;

  // The static state: each layer's weights at its share.
  double parameters = 0, parameters_rank = 0, trainable = 0, trainable_rank = 0;
  for (size_t j = 0; j < n; ++j) {
    const LayerFit& l = whole.layers[j];
    parameters += static_cast<double>(l.parameter_bytes);
    parameters_rank += static_cast<double>(l.parameter_bytes) * shares[j].parameters;
    trainable += static_cast<double>(l.trainable_bytes());
    trainable_rank += static_cast<double>(l.trainable_bytes()) * shares[j].parameters;
  }
  rank.static_bytes =
      whole_static(parameters, trainable, whole.static_bytes)
          .share(parameters > 0 ? parameters_rank / parameters : 1, trainable > 0 ? trainable_rank / trainable : 1)
          .total();
  const double static_shift = rank.static_bytes - whole.static_bytes;

  double before = 0, before_rank = 0, copies_before = 0, copies_before_rank = 0;
  double stream_bytes = 0;  // the last norm's output a sample: a projection's input
  for (size_t j = 0; j < n; ++j) {
    const LayerFit& w = whole.layers[j];
    const LayerShare& share = shares[j];
    LayerFit& r = rank.layers[j];
    const double through = before + held_bytes[j], through_rank = before_rank + held_rank[j];
    // The live tensors: in forward the layer's input; in backward its
    // output's gradient and, beyond it, the residual stream's gradient
    // waiting for the block's input (whole on every rank without sequence
    // parallelism).
    const double input = j > 0 ? shares[j - 1].output : (share.slots.empty() ? share.output : share.slots.front());
    const auto backward_live = [&](const LinearCurve& c) {
      const double live = c.per_sample - through, gradient = std::clamp(w.output_bytes_per_sample, 0.0, std::max(live, 0.0));
      return live > 0 ? (gradient * share.output + (live - gradient) * stream) / live : share.output;
    };

    const double forward_shift = static_shift - copies_before + copies_before_rank;
    const double backward_shift = forward_shift - copies[j] + copies_rank[j];
    r.forward_start = rescaled(w.forward_start, before, before_rank, input, forward_shift);
    r.forward_peak = beyond(r.forward_start, w.forward_start, w.forward_peak, share.output, share.parameters);
    r.forward_gap_peak = rescaled(w.forward_gap_peak, before, before_rank, input, forward_shift);
    r.backward_start = rescaled(w.backward_start, through, through_rank, backward_live(w.backward_start), backward_shift);
    r.backward_peak = beyond(r.backward_start, w.backward_start, w.backward_peak, share.backward_working, share.parameters);
    r.backward_gap_peak =
        rescaled(w.backward_gap_peak, through, through_rank, backward_live(w.backward_gap_peak), backward_shift);
    // The whole layer's scratch and stored figures: the rank's peaks are the lines above.
    r.forward_headroom.clear();
    r.backward_headroom.clear();
    r.stored_forward_headroom.clear();
    r.stored_backward_headroom.clear();
    r.stored_backward_gap_headroom.clear();
    if (is_norm(w.kind)) stream_bytes = w.output_bytes_per_sample;
    const auto input_slot = std::find_if(w.saved.begin(), w.saved.end(), [](const auto& t) { return t.slot == "input"; });
    // A frozen projection (a LoRA base) saves no input: its input is the normed stream all the same.
    const double input_bytes = input_slot != w.saved.end()   ? input_slot->storage_bytes_per_sample
                               : w.kind == LayerKind::linear ? stream_bytes
                                                             : 0;
    if (share.gathered_input > 0) {
      // The gathered input in forward; in backward that and the input's
      // gradient over every token, of which the transient above counts
      // this rank's share (its saved input's, or the stream's).
      const double gathered = input_bytes * share.gathered_input;
      const double held = share.slots.empty() ? stream : share.slots.front();
      if (r.forward_peak.per_sample > 0) r.forward_peak.per_sample += gathered;
      if (r.backward_peak.per_sample > 0) r.backward_peak.per_sample += gathered * (2 - held / share.gathered_input);
    }
    if (share.input_gradient > 0 && r.backward_peak.per_sample > 0) {
      r.backward_peak.per_sample += input_bytes * (share.input_gradient - share.backward_working);
    }
    if (share.summed_output > 0) {
      // The output over every token before its reduce-scatter; in backward
      // its gradient gathered over every token beside this rank's share.
      const double whole = w.output_bytes_per_sample * share.summed_output;
      if (r.forward_peak.per_sample > 0) r.forward_peak.per_sample += whole - w.output_bytes_per_sample * share.output;
      if (r.backward_peak.per_sample > 0) r.backward_peak.per_sample += whole;
    }
    scale_time(r.forward_seconds, share.compute);
    scale_time(r.backward_seconds, share.compute);
    r.forward_timed.clear();  // the whole layer's times: the rank's are the curves above
    r.backward_timed.clear();

    r.parameter_bytes = scaled(w.parameter_bytes, share.parameters);
    r.frozen_bytes = scaled(w.frozen_bytes, share.parameters);
    r.shared_trainable_bytes = scaled(w.shared_trainable_bytes, share.parameters);
    r.parameter_copy_bytes = scaled(w.parameter_copy_bytes, share.parameters);
    r.output_bytes_per_sample = w.output_bytes_per_sample * share.output;
    r.forward_flops_per_sample = w.forward_flops_per_sample * share.compute;
    r.forward_bytes_moved_per_sample = w.forward_bytes_moved_per_sample * share.compute;
    for (size_t k = 0; k < r.saved.size(); ++k) {
      SavedTensorProfile& t = r.saved[k];
      if (!t.per_sample) continue;
      const double slot = share.slots[k];
      t.numel_per_sample *= slot;
      t.storage_bytes_per_sample *= storage_share.count(t.storage) ? storage_share[t.storage] : slot;
      t.sample_shape = split_shape(t.sample_shape, slot);
    }
    before = through, before_rank = through_rank;
    copies_before += copies[j], copies_before_rank += copies_rank[j];
  }

  for (SegmentFit& seg : rank.segments) {
    double flops = 0, flops_rank = 0;
    for (size_t j = 0; j < n; ++j) {
      if (whole.layers[j].segment != seg.path) continue;
      flops += whole.layers[j].forward_seconds.per_sample;
      flops_rank += whole.layers[j].forward_seconds.per_sample * shares[j].compute;
    }
    scale_time(seg.recompute_seconds, flops > 0 ? flops_rank / flops : all_share);
    const double input = storage_share.count(seg.input.storage) ? storage_share[seg.input.storage] : all_share;
    if (seg.input.per_sample) {
      seg.input.numel_per_sample *= input;
      seg.input.storage_bytes_per_sample *= input;
      seg.input.sample_shape = split_shape(seg.input.sample_shape, input);
    }
  }

  const double static_share = whole.static_bytes > 0 ? rank.static_bytes / whole.static_bytes : 1;
  rank.unattributed_peak.per_sample *= all_share;
  rank.optimizer_peak = {whole.optimizer_peak.per_sample * all_share,
                         rank.static_bytes + (whole.optimizer_peak.fixed - whole.static_bytes) * static_share};
  rank.optimizer_seconds = rank.optimizer_seconds.times(static_share);
  return rank;
}

}  // namespace papaya::model
