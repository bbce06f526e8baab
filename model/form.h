#pragma once
// The stored forms a strategy puts a saved tensor in (strategy.h), apart so
// that the strategy table (strategy_table.h) can name them.

namespace papaya::model {

// How a saved tensor is stored between forward and backward.
enum class Form {
  raw,         // as the native LibTorch path keeps it
  quantized,   // per-group min/scale, stochastic rounding, bit-packed (masks: 1 bit)
  adaptive,    // quantized with bits per tensor chosen from its sensitivity (GACT)
  inverted,    // GELU/SiLU input dropped: a 1-bit branch mask kept, and the output
               // used as the layer that consumes it keeps it
  recomputed,  // not stored: recomputed in backward (the LM head's log-probabilities)
};

}  // namespace papaya::model
