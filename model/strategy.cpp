#include "model/strategy.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include "model/error.h"
#include "model/strategy_table.h"

namespace papaya::model {
namespace {

std::vector<std::string> split_plus(const std::string& text) {
  std::vector<std::string> terms;
  std::stringstream in(text);
  std::string term;
  while (std::getline(in, term, '+')) terms.push_back(term);
  if (!text.empty() && text.back() == '+') terms.push_back("");
  return terms;
}

// "quantize-4" -> 4 if `term` is `prefix` followed by a positive number.
std::optional<int> bits_of(const std::string& term, const std::string& prefix) {
  if (term.rfind(prefix, 0) != 0 || term.size() == prefix.size()) return std::nullopt;
  const std::string digits = term.substr(prefix.size());
  if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 2) return std::nullopt;
  return std::stoi(digits);
}

// Backward exponentiates log-probabilities: rounding them biases the gradient.
std::string logprobs_why(const LayoutLayer& layer) {
  return std::string("log-probabilities cannot be quantized without biasing the gradient") +
         (traits(layer.kind).recomputes_logprobs ? " (use recompute)" : " (they are kept)");
}

// The row whose term `term` is, with its bits where it takes them; nullptr if none.
const StrategyRow* row_of_term(const std::string& term, int& bits) {
  for (const auto& row : strategy_table()) {
    if (!row.takes_bits) {
      if (term == row.term) return &row;
    } else if (auto b = bits_of(term, std::string(row.term) + "-")) {
      bits = *b;
      return &row;
    }
  }
  return nullptr;
}

}  // namespace

bool rounds_values(Form form) {
  switch (form) {
    case Form::quantized:
    case Form::adaptive: return true;
    case Form::raw:
    case Form::inverted:
    case Form::recomputed: return false;
  }
  return false;
}

bool drops_tensor(Form form) {
  switch (form) {
    case Form::recomputed:
    case Form::inverted: return true;
    case Form::raw:
    case Form::quantized:
    case Form::adaptive: return false;
  }
  return false;
}

bool chooses_bits(Form form) {
  switch (form) {
    case Form::adaptive: return true;
    case Form::raw:
    case Form::quantized:
    case Form::inverted:
    case Form::recomputed: return false;
  }
  return false;
}

bool recomputes(Form form) { return row_of(form).encoding == Encoding::none; }

bool derives_from_output(Form form) { return row_of(form).derivative_from_output; }

std::string TensorStrategy::name() const {
  const StrategyRow& row = row_of(form);
  std::string n = form == Form::raw ? "" : row.takes_bits ? std::string(row.term) + "-" + std::to_string(bits) : row.term;
  if (swap) n += (n.empty() ? "" : "+") + std::string(swap_row().term);
  return n.empty() ? row.term : n;
}

bool TensorStrategy::operator==(const TensorStrategy& o) const {
  return form == o.form && bits == o.bits && group() == o.group() && headwise == o.headwise && swap == o.swap;
}

std::string SegmentStrategy::name() const {
  if (!recompute) return "keep";
  return input.is_keep() ? "recompute" : "recompute+" + input.name();
}

bool SegmentStrategy::operator==(const SegmentStrategy& o) const { return recompute == o.recompute && input == o.input; }

TensorStrategy parse_tensor_strategy(const std::string& text, const std::string& where) {
  TensorStrategy s;
  int quantize_bits = 0;
  for (const auto& term : split_plus(text)) {
    const auto fail = [&](const std::string& why) {
      throw InputError(where + ": '" + text + "': " + why + " (expected " + tensor_grammar() + ")");
    };
    int bits = 0;
    const StrategyRow* row = row_of_term(term, bits);
    if (!row) fail("unknown term '" + term + "'");
    if (row->swaps) {
      if (s.swap) fail("swap given twice");
      s.swap = true;
      continue;
    }
    switch (row->form) {
      case Form::raw:
        if (text != term) fail("keep combines with nothing");
        break;
      case Form::inverted:
        if (text != term) fail("invert combines with nothing: the output is kept as its consumer keeps it");
        s.form = Form::inverted;
        break;
      case Form::recomputed:
        if (text != term) fail("recompute of a tensor combines with nothing");
        s.form = Form::recomputed;
        break;
      case Form::quantized:
        if (bits != 8 && bits != 4 && bits != 2 && bits != 1) fail("quantize takes 8, 4 or 2 bits (1 for masks)");
        if (quantize_bits || chooses_bits(s.form)) fail("one quantization per tensor");
        quantize_bits = bits;
        break;
      case Form::adaptive:
        if (bits < 2 || bits > 8) fail("adaptive takes an average-bits budget from 2 to 8");
        if (quantize_bits || s.form != Form::raw) fail("adaptive combines only with swap");
        s.form = Form::adaptive;
        s.bits = bits;
        break;
    }
  }
  if (quantize_bits) {
    s.form = Form::quantized;
    s.bits = quantize_bits;
  }
  return s;
}

SegmentStrategy parse_segment_strategy(const std::string& text, const std::string& where) {
  SegmentStrategy s;
  if (text == "keep") return s;
  const std::string head = "recompute";
  if (text.rfind(head, 0) != 0 || (text.size() > head.size() && text[head.size()] != '+')) {
    throw InputError(where + ": '" + text +
                     "': a segment is keep or recompute, optionally +quantize-N or +swap for its stored input");
  }
  s.recompute = true;
  if (text.size() > head.size()) {
    s.input = parse_tensor_strategy(text.substr(head.size() + 1), where);
    if (s.input.form != Form::raw && s.input.form != Form::quantized) {
      throw InputError(where + ": '" + text + "': a recomputed segment's input is kept raw, quantized or swapped");
    }
  }
  return s;
}

std::optional<std::string> why_not(const LayoutLayer& layer, const LayoutSlot& slot, const TensorStrategy& s) {
  // Made only for an answer: a plan space asks of every slot and strategy.
  const auto what = [&] { return std::string(to_string(layer.kind)) + " " + to_string(slot.kind) + " tensor"; };
  switch (s.form) {
    case Form::raw: break;
    case Form::quantized:
      if (slot.kind == SlotKind::mask) {
        if (s.bits != 1) return "a mask is compressed to 1 bit (quantize-1), not " + std::to_string(s.bits);
      } else if (slot.kind != SlotKind::activation) {
        return "a " + what() + " cannot be quantized";
      } else if (s.bits == 1) {
        return "1 bit is for masks; an activation takes quantize-8, -4 or -2";
      } else if (holds_logprobs(layer.kind, slot.name)) {
        return logprobs_why(layer);
      }
      if (s.headwise && !traits(layer.kind).attention) return "headwise ranges apply to attention tensors only";
      break;
    case Form::adaptive:
      if (slot.kind != SlotKind::activation) return "a " + what() + " cannot be quantized";
      if (!traits(layer.kind).estimates_sensitivity) {
        return "adaptive bits need the layer's own backward to estimate a tensor's sensitivity, and a " + what() +
               "'s is LibTorch's (quantize-N applies)";
      }
      if (holds_logprobs(layer.kind, slot.name)) return logprobs_why(layer);
      break;
    case Form::inverted:
      if (!traits(layer.kind).invertible_input || slot.name != "input") {
        return "invert applies to the input of a gelu or silu layer only";
      }
      break;
    case Form::recomputed:
      if ((!traits(layer.kind).recomputes_logprobs || slot.name != "logprobs") &&
          (layer.kind != LayerKind::softmax || slot.name != "output")) {
        return "recompute of a single tensor applies to the LM head's log-probabilities and to attention's softmax output "
               "(its core recomputed from q, k and v; recompute segments instead)";
      }
      break;
  }
  if (s.swap && (slot.kind == SlotKind::stats || slot.kind == SlotKind::index)) {
    return "a " + what() + " is too small to swap";
  }
  if (s.swap && drops_tensor(s.form)) {
    return "a " + s.name() + " tensor is not stored, so it cannot be swapped";
  }
  return std::nullopt;
}

TensorStrategy adapt_to_slot(const LayoutLayer& layer, const LayoutSlot& slot, const TensorStrategy& s) {
  TensorStrategy out = s;
  if (slot.kind == SlotKind::index || slot.kind == SlotKind::stats) return TensorStrategy{};
  if (slot.kind == SlotKind::mask) {
    out.form = rounds_values(s.form) ? Form::quantized : Form::raw;
    out.bits = out.form == Form::quantized ? 1 : 0;
    out.headwise = false;
  } else if (holds_logprobs(layer.kind, slot.name) && rounds_values(s.form)) {
    out = TensorStrategy{};
    if (traits(layer.kind).recomputes_logprobs) {
      out.form = Form::recomputed;
    } else {
      out.swap = s.swap;  // a classifier's log-probabilities are small: kept
    }
  } else if (derives_from_output(s.form) && !(traits(layer.kind).invertible_input && slot.name == "input")) {
    out = TensorStrategy{};
  } else if (chooses_bits(s.form) && !traits(layer.kind).estimates_sensitivity) {
    out = TensorStrategy{};
    out.swap = s.swap;
  }
  if (out.headwise && !traits(layer.kind).attention) out.headwise = false;
  if (drops_tensor(out.form)) out.swap = false;
  return out;
}

// With bf16 ranges, groups of 128 cost 8.25 and 4.25 bits per value, as
// fp32 ranges over 256 did, with narrower ranges. 2-bit codes take groups of
// 64 (2.5 bits per value): over 128 values their rounding noise left the
// final loss of the tiny networks 6-8% above keep's, over 64 about 4-5%.
int default_group_size(int bits) { return bits == 2 ? 64 : 128; }

int64_t lm_head_chunk_rows(int64_t vocab) {
  const int64_t words = std::max<int64_t>(1, vocab);
  const auto rows_in = [&](int shift) -> int64_t { return (int64_t{1} << shift) / words; };
  return std::max<int64_t>({1, rows_in(21), std::min(lm_head_min_chunk_rows, rows_in(24))});
}

int64_t device_bytes(SlotKind kind, int64_t numel, int element_size, const TensorStrategy& s, int64_t head_numel) {
  if (s.swap) return 0;
  switch (encoding(kind, s)) {
    case Encoding::none: return 0;
    case Encoding::raw: return numel * element_size;
    case Encoding::mask: return (numel + 7) / 8;
    case Encoding::quantized: {
      const int64_t head = s.headwise && head_numel > 0 ? head_numel : numel;
      const int64_t groups = (head > 0 ? numel / head : 0) * ((head + s.group() - 1) / s.group());
      return groups * (s.group() * s.bits / 8 + quantized_range_bytes);
    }
  }
  return 0;
}

int64_t host_bytes(SlotKind kind, int64_t numel, int element_size, const TensorStrategy& s, int64_t head_numel) {
  if (!s.swap) return 0;
  TensorStrategy on_device = s;
  on_device.swap = false;
  return device_bytes(kind, numel, element_size, on_device, head_numel);
}

Encoding encoding(SlotKind kind, const TensorStrategy& s) {
  const Encoding e = row_of(s.form).encoding;
  return e == Encoding::quantized && kind == SlotKind::mask ? Encoding::mask : e;
}

bool is_packed(const TensorStrategy& s) {
  const Encoding e = row_of(s.form).encoding;
  return e == Encoding::mask || e == Encoding::quantized;
}

int codec_bits(const TensorStrategy& s) { return row_of(s.form).encoding == Encoding::mask ? 1 : s.bits; }

int variance_bits(const TensorStrategy& s) {
  const int bits = row_of(s.form).variance_bits;
  return bits < 0 ? s.bits : bits;
}

}  // namespace papaya::model
