#pragma once
// Strategies: what happens to one saved tensor (keep it, quantize it, invert
// the activation that needs it, swap it to host memory, ...) and to one
// segment (recompute it in backward). Names follow one grammar everywhere —
// plan files, `papaya train --plan`, the model's predictions:
//   tensor:  keep | invert | recompute | quantize-{8,4,2} | adaptive-{N} | swap,
//            the last three joined by '+' (e.g. quantize-2+swap)
//   segment: keep | recompute, optionally +quantize-N / +swap for its stored input
// Each strategy is a row of model/strategy_table.h, from which the parser,
// the grammars and the lists of names are derived.
#include <cstdint>
#include <optional>
#include <string>

#include "model/network_layout.h"
#include "model/strategy_table.h"

namespace papaya::model {

// An LM head whose log-probabilities are recomputed runs its forward and its
// backward over this many token rows at a time (the executor's chunk, which
// the performance model prices): 8 MiB of fp32 logits per chunk or more, up
// to lm_head_min_chunk_rows rows while a chunk's logits stay within 64 MiB,
// so that the chunks' products run about as fast as the whole's. Fewer rows
// are slower than the model's price (one more forward): on the 2-core CPU,
// a vocabulary of 16,384 at 128 rows a chunk made the head's backward cost
// 1.8 of its forwards more than keep's, at 256 rows 1.1, at 512 1.05;
// Qwen2-0.5B's 151,936 words took 13 rows a chunk (now 110), and its
// recompute steps on the H200 were 22-47 % slower than predicted.
constexpr int64_t lm_head_min_chunk_rows = 256;
int64_t lm_head_chunk_rows(int64_t vocab);

// Values per (min, scale) group of a quantized tensor whose plan does not
// set `group`.
int default_group_size(int bits);

// What a form does with the tensor's values, over every Form (a switch
// without default, so that a new form must answer): quantized and adaptive
// round them in groups (group and headwise settings apply; a mask under
// them is 1 bit; log-probabilities are never rounded); recomputed and
// inverted do not store the tensor at all (nothing to swap).
bool rounds_values(Form form);
bool drops_tensor(Form form);
// Adaptive: the bits are chosen per tensor while training (GACT's controller).
bool chooses_bits(Form form);
// From the form's row of the strategy table: nothing stored, the tensor
// recomputed in backward (Encoding::none); the gradient derived from the
// layer's output, kept as its consumer keeps it (derivative_from_output).
bool recomputes(Form form);
bool derives_from_output(Form form);

struct TensorStrategy {
  Form form = Form::raw;
  int bits = 0;           // quantized: 8, 4 or 2 (1 for masks); adaptive: the average-bits budget
  int group_size = 0;     // quantized, adaptive: values per (min, scale) group; 0: default_group_size(bits)
  bool headwise = false;  // quantized: groups never cross an attention head (Mesa)
  bool swap = false;      // kept in pinned host memory (the packed bytes, if packed)

  bool is_keep() const { return form == Form::raw && !swap; }
  int group() const { return group_size > 0 ? group_size : default_group_size(bits); }
  std::string name() const;  // in the grammar above
  bool operator==(const TensorStrategy& o) const;
};

struct SegmentStrategy {
  bool recompute = false;
  TensorStrategy input;  // how a recomputed segment keeps its input (raw, quantized, swapped)

  std::string name() const;
  bool operator==(const SegmentStrategy& o) const;
};

// Parse the grammar above; `where` names the source in errors
// ("plan.json: /tensors/blocks.0.mlp.fc1").
TensorStrategy parse_tensor_strategy(const std::string& text, const std::string& where);
SegmentStrategy parse_segment_strategy(const std::string& text, const std::string& where);

// Why `s` cannot apply to this slot of this layer, or nullopt if it can.
std::optional<std::string> why_not(const LayoutLayer& layer, const LayoutSlot& slot, const TensorStrategy& s);

// The natural form of a whole-layer strategy for one of its slots: a
// quantize-N or adaptive-N asked of a layer keeps its masks as 1 bit and its
// index and stats slots raw, and log-probabilities exact (the LM head's
// recomputed, a classifier's kept: rounding them biases the gradient);
// invert touches only a GELU/SiLU input. Returns keep where nothing of `s`
// applies.
TensorStrategy adapt_to_slot(const LayoutLayer& layer, const LayoutSlot& slot, const TensorStrategy& s);

// Bytes of a quantized group's range: its min and scale, bf16 each (half
// what fp32 ranges cost, which matters to small groups of 2-bit codes).
constexpr int64_t quantized_range_bytes = 4;

// Bytes a saved tensor of `numel` elements of `element_size` bytes occupies
// on the device under `s` (0 when swapped or recomputed; for inverted, the
// branch mask only — the output is accounted where its consumer keeps it). The
// executor's packed tensors have exactly these sizes:
//   quantized activation: ceil(numel/G) groups of G*bits/8 packed bytes plus
//                         a bf16 min and scale (quantized_range_bytes) each;
//   mask (1 bit):         ceil(numel/8).
// Headwise groups never cross a head: each head's `head_numel` values (the
// last two dimensions of a (batch, heads, tokens, .) attention tensor) are
// padded to whole groups, numel/head_numel heads of ceil(head_numel/G) groups;
// head_numel 0 counts the tensor as one head.
int64_t device_bytes(SlotKind kind, int64_t numel, int element_size, const TensorStrategy& s, int64_t head_numel = 0);

// Bytes moved to host memory under `s` (0 unless swapped).
int64_t host_bytes(SlotKind kind, int64_t numel, int element_size, const TensorStrategy& s, int64_t head_numel = 0);

// How a slot of `kind` stored under `s` is laid out (a mask slot quantized is 1 bit).
Encoding encoding(SlotKind kind, const TensorStrategy& s);
// Whether its bytes go through the codec, and at which bit width (masks and
// inverted branch masks: 1).
bool is_packed(const TensorStrategy& s);
int codec_bits(const TensorStrategy& s);
// The bits of stochastic rounding the variance proxy counts `s` as; 1 or
// less: it adds none.
int variance_bits(const TensorStrategy& s);

}  // namespace papaya::model
