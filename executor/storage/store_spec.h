#pragma once
// How one slot is stored: what a plan sets on each slot of a layer
// (Layer::set_store_spec) and store() reads (stored.h). Apart from the
// stored forms so that a layer, which holds one per slot, does not depend on
// them (they report their bytes to a layer observer: stored_bytes.h).
#include <memory>
#include <string>

#include "model/strategy.h"

namespace papaya::executor {

class AdaptiveBits;

// The plan's strategy and, for adaptive, who chooses the bits.
struct StoreSpec {
  model::TensorStrategy strategy;
  std::shared_ptr<AdaptiveBits> adaptive;
  int adaptive_index = -1;
  std::string label;  // its name in stored-bytes reports; the strategy's name if empty
};

}  // namespace papaya::executor
