#include "model/fit/block_scaling.h"

#include <algorithm>

#include "model/error.h"

namespace papaya::model {
namespace {

std::string block_prefix(int i) { return "blocks." + std::to_string(i) + "."; }

// `text` with the names of block `from` (and of the one before it) made those
// of block `to` (and of the one before it): paths, storages, segments.
std::string renamed(const std::string& text, int from, int to) {
  std::string out = text;
  const auto swap_in = [&out](const std::string& old_name, const std::string& new_name) {
    for (size_t at = out.find(old_name); at != std::string::npos; at = out.find(old_name, at + new_name.size())) {
      out.replace(at, old_name.size(), new_name);
    }
  };
  if (out == "blocks." + std::to_string(from)) return "blocks." + std::to_string(to);  // a segment
  if (from > 0 && out == "blocks." + std::to_string(from - 1)) return "blocks." + std::to_string(to - 1);
  // Through a placeholder, so that a block renamed to the next one's name is
  // not renamed twice.
  swap_in(block_prefix(from), "\x01");
  if (from > 0) swap_in(block_prefix(from - 1), block_prefix(to - 1));
  swap_in("\x01", block_prefix(to));
  return out;
}

void rename(LayerFit& layer, int from, int to) {
  layer.path = renamed(layer.path, from, to);
  layer.segment = renamed(layer.segment, from, to);
  for (auto& t : layer.saved) {
    t.storage = renamed(t.storage, from, to);
    t.last_forward_use = renamed(t.last_forward_use, from, to);
    t.view = renamed(t.view, from, to);
  }
  for (auto& s : layer.output_saved_by) s = renamed(s, from, to);
}

LinearCurve operator-(const LinearCurve& a, const LinearCurve& b) { return {a.per_sample - b.per_sample, a.fixed - b.fixed}; }

// `c` plus `times` x `step`, plus `shift` bytes.
LinearCurve advanced(const LinearCurve& c, const LinearCurve& step, double times, double shift) {
  return {c.per_sample + times * step.per_sample, c.fixed + times * step.fixed + shift};
}

// The memory figures of a layer, as pointers into it.
std::vector<LinearCurve LayerFit::*> memory_figures() {
  return {&LayerFit::forward_start, &LayerFit::forward_peak,     &LayerFit::backward_start,
          &LayerFit::backward_peak, &LayerFit::forward_gap_peak, &LayerFit::backward_gap_peak};
}

void shift_all(LayerFit& layer, const LinearCurve& step, double times, double shift) {
  for (auto figure : memory_figures()) layer.*figure = advanced(layer.*figure, step, times, shift);
}

// `layer` with the times, costs and each pass's scratch above its start of
// `alike`, the same layer of a block of its kind (a window bounds attention's
// work and its kernel's scratch, not what the layer saves): what it holds
// at its start and between layers stays its own.
void as_alike(LayerFit& layer, const LayerFit& alike) {
  layer.forward_seconds = alike.forward_seconds;
  layer.backward_seconds = alike.backward_seconds;
  layer.forward_timed = alike.forward_timed;
  layer.backward_timed = alike.backward_timed;
  layer.forward_flops_per_sample = alike.forward_flops_per_sample;
  layer.forward_bytes_moved_per_sample = alike.forward_bytes_moved_per_sample;
  layer.forward_peak = advanced(layer.forward_start, alike.forward_peak - alike.forward_start, 1, 0);
  layer.backward_peak = advanced(layer.backward_start, alike.backward_peak - alike.backward_start, 1, 0);
  layer.forward_headroom = alike.forward_headroom;
  layer.backward_headroom = alike.backward_headroom;
  layer.stored_forward_headroom = alike.stored_forward_headroom;
  layer.stored_backward_headroom = alike.stored_backward_headroom;
  layer.stored_backward_gap_headroom = alike.stored_backward_gap_headroom;
}

}  // namespace

int block_count(const LayerModel& model) {
  int count = 0;
  for (const auto& l : model.layers) count = std::max(count, block_of_path(l.path) + 1);
  return count;
}

LayerModel scale_blocks(const LayerModel& profiled, int blocks, double static_bytes, const std::vector<int>& kinds,
                        const std::string& label) {
  const int k = block_count(profiled);
  if (k < 2) throw InputError(label + ": scaling blocks needs at least 2 profiled (has " + std::to_string(k) + ")");
  if (blocks < k)
    throw InputError(label + ": " + std::to_string(blocks) + " blocks are fewer than the " + std::to_string(k) + " profiled");
  // The layers: those before the blocks, block by block, those after.
  std::vector<std::vector<size_t>> of_block(static_cast<size_t>(k));
  size_t first = profiled.layers.size(), last = 0;
  for (size_t j = 0; j < profiled.layers.size(); ++j) {
    const int b = block_of_path(profiled.layers[j].path);
    if (b < 0) continue;
    of_block[static_cast<size_t>(b)].push_back(j);
    first = std::min(first, j);
    last = j;
  }
  // Each block a run after the one before; the last two alike (blocks of
  // another kind before them may hold other layers: DeepSeek-V3's dense
  // blocks before its mixtures).
  const size_t per_block = of_block[static_cast<size_t>(k - 1)].size();
  size_t next = first;
  for (int b = 0; b < k; ++b) {
    const auto& js = of_block[static_cast<size_t>(b)];
    if (js.empty() || js.front() != next || js.back() + 1 != js.front() + js.size() || (b >= k - 2 && js.size() != per_block)) {
      throw InputError(label + ": the blocks' layers are not " + std::to_string(k) +
                       " runs one after another, the last two alike");
    }
    next = js.back() + 1;
  }
  if (!kinds.empty() && kinds.size() != static_cast<size_t>(blocks)) {
    throw InputError(label + ": " + std::to_string(kinds.size()) + " kinds of block for " + std::to_string(blocks) + " blocks");
  }
  const auto kind = [&](int b) { return kinds.empty() ? 0 : kinds[static_cast<size_t>(b)]; };
  // The last profiled block up to `last` of block b's kind (-1: none).
  const auto alike = [&](int b, int last) {
    for (int j = last; j >= 0; --j) {
      if (kind(j) == kind(b)) return j;
    }
    return -1;
  };
  for (int b = k; b < blocks; ++b) {
    const int like = alike(b, k - 1);
    if (like < 0) {
      throw InputError(label + ": block " + std::to_string(b) +
                       " is of a kind (its attention's window, an MLP or a mixture) that none of the " + std::to_string(k) +
                       " profiled blocks is");
    }
    if (of_block[static_cast<size_t>(like)].size() != per_block) {
      throw InputError(label + ": block " + std::to_string(b) + " holds other layers than the last profiled block (block " +
                       std::to_string(like) + "'s kind), which the blocks past it copy: profile the whole network");
    }
  }
  const auto& last_block = of_block[static_cast<size_t>(k - 1)];
  const auto& before_last = of_block[static_cast<size_t>(k - 2)];
  const double shift = static_bytes - profiled.static_bytes;
  // What one block more holds, at every figure from its first layer on.
  const LinearCurve step = profiled.layers[last_block.front()].forward_start - profiled.layers[before_last.front()].forward_start;

  LayerModel out = profiled.without_layers();
  for (size_t j = 0; j < last_block.front(); ++j) {
    out.layers.push_back(profiled.layers[j]);
    shift_all(out.layers.back(), {}, 0, shift);
  }
  // Blocks K-1 to N-1 as the last profiled one, b - from blocks more held;
  // but a block's last layer meets the next block (which saves its output,
  // and whose backward precedes it), not the layers after the blocks: in all
  // but the last block it is the one of the block before the last profiled.
  // Where that one is of another kind, the layer's work and scratch are the
  // last profiled block's of its kind.
  for (int b = k - 1; b < blocks; ++b) {
    for (size_t t = 0; t < per_block; ++t) {
      const bool meets_a_block = t + 1 == per_block && b + 1 < blocks;
      const int from = meets_a_block ? k - 2 : k - 1;
      LayerFit layer = profiled.layers[(meets_a_block ? before_last : last_block)[t]];
      shift_all(layer, step, b - from, shift);
      rename(layer, k - 1, meets_a_block ? b + 1 : b);  // block `from` becomes b
      if (kind(from) != kind(b)) as_alike(layer, profiled.layers[of_block[static_cast<size_t>(alike(b, k - 1))][t]]);
      out.layers.push_back(std::move(layer));
    }
  }
  for (size_t j = last + 1; j < profiled.layers.size(); ++j) {
    LayerFit layer = profiled.layers[j];
    shift_all(layer, step, blocks - k, shift);
    rename(layer, k - 1, blocks - 1);
    out.layers.push_back(std::move(layer));
  }

  std::vector<const SegmentFit*> segment_of(static_cast<size_t>(k), nullptr);
  for (const auto& s : profiled.segments) {
    const int b = block_of_path(s.path);
    if (b >= 0 && s.path == "blocks." + std::to_string(b)) segment_of[static_cast<size_t>(b)] = &s;
  }
  for (const auto& s : profiled.segments) {
    out.segments.push_back(s);
    if (block_of_path(s.path) != k - 1) continue;
    for (int b = k; b < blocks; ++b) {
      SegmentFit copy = s;
      copy.path = renamed(s.path, k - 1, b);
      copy.input.storage = renamed(s.input.storage, k - 1, b);
      copy.input.last_forward_use = renamed(s.input.last_forward_use, k - 1, b);
      const SegmentFit* timed = segment_of[static_cast<size_t>(alike(b, k - 1))];
      if (timed) copy.recompute_seconds = timed->recompute_seconds;
      out.segments.push_back(std::move(copy));
    }
  }
  out.static_bytes = static_bytes;
  out.optimizer_peak.fixed += shift;
  // The optimizer step's time goes with the state it updates.
  const double ratio = static_bytes / profiled.static_bytes;
  out.optimizer_seconds = {profiled.optimizer_seconds.floor * ratio, profiled.optimizer_seconds.per_sample * ratio,
                           profiled.optimizer_seconds.fixed * ratio};
  return out;
}

}  // namespace papaya::model
