#pragma once
// What a tensor saved for backward is, which decides the strategies that can
// apply to it.
#include <string>

namespace papaya::model {

enum class SlotKind {
  activation,  // floating-point data: quantize, adaptive, swap (invert for GELU/SiLU inputs)
  mask,        // used only as a mask (dropout mask, ReLU output): 1 bit when compressed
  index,       // integers (embedding ids, max-pool argmax): kept as they are
  stats,       // small per-row or per-channel floats (norm mean/rstd): kept as they are
};
const char* to_string(SlotKind kind);
SlotKind slot_kind_from_string(const std::string& text);  // throws InputError

}  // namespace papaya::model
