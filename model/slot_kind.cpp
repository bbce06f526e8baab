#include "model/slot_kind.h"

#include "model/error.h"

namespace papaya::model {

const char* to_string(SlotKind kind) {
  switch (kind) {
    case SlotKind::activation: return "activation";
    case SlotKind::mask: return "mask";
    case SlotKind::index: return "index";
    case SlotKind::stats: return "stats";
  }
  return "?";
}

SlotKind slot_kind_from_string(const std::string& text) {
  for (SlotKind k : {SlotKind::activation, SlotKind::mask, SlotKind::index, SlotKind::stats}) {
    if (text == to_string(k)) return k;
  }
  throw InputError("unknown saved-tensor kind '" + text + "' (expected activation, mask, index or stats)");
}

}  // namespace papaya::model
