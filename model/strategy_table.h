#pragma once
// The strategies of a saved tensor in one table: the grammar's terms and
// everything papaya derives from them — the parser and its grammar text, the
// bytes a stored form holds and how the executor stores it, the codec and
// variance terms of the model and the planner, the planner's candidates,
// PAPAYA's whole-network plan names, `recommend`'s single optimizations and
// the README's list (a test holds each to the table). Adding a strategy is a
// row here (and a Form if it stores something new), the executor Function
// that stores it, and their tests.
#include <string>
#include <vector>

#include "model/form.h"

namespace papaya::model {

// How a stored form's bytes are laid out: what device_bytes counts and what
// the executor's store() writes.
enum class Encoding {
  none,       // nothing stored: recomputed in backward
  raw,        // the tensor as the native path keeps it
  mask,       // 1 bit per element: a mask slot, or an inverted activation's branch mask
  quantized,  // groups of codes of the strategy's bits, a bf16 min and scale each
};

struct StrategyRow {
  const char* term;     // the grammar's term; "term-N" where takes_bits
  bool takes_bits;      // quantize-8, adaptive-4
  const char* spelled;  // as the grammars and the README list it: "quantize-{8,4,2}", "adaptive-N"
  const char* note;     // what the tensor grammar in errors adds after it
  Form form;            // how it stores the tensor (swap: whatever form it is joined with)
  bool swaps;           // moves the stored bytes to host memory: joins a compressing strategy by '+'
  bool compresses;      // one per tensor; joins swap by '+'
  Encoding encoding;    // on an activation slot
  // Backward derives the gradient from the output, beyond keep's backward
  // (Target::invert_extra_seconds).
  bool derivative_from_output;
  // The stochastic rounding the gradient-variance proxy counts it as: 0 none
  // (exact), -1 to its own bits, N to N bits.
  int variance_bits;
  std::vector<int> listed_bits;  // where takes_bits: what the planner searches and PAPAYA's table lists
  bool searched;                 // the planner tries it on a saved tensor
  bool searched_with_swap;       // ... and joined with swap, on a tensor or a segment's input
  bool segment_input;            // the planner tries it on a recomputed segment's input
  const char* plan_term;         // its term in whole-network plan names; nullptr: none
  // PAPAYA's table crosses the factors in this order; rows of one factor are
  // alternatives (one compression per plan); -1: a name alone (keep).
  int plan_factor;
};

// Every strategy, in the README's order.
const std::vector<StrategyRow>& strategy_table();

// The row that stores in `form` (raw: keep's).
const StrategyRow& row_of(Form form);
// The swap row.
const StrategyRow& swap_row();

// The names a row stands for: "invert", or "quantize-8", "quantize-4", ...
// for each of its listed bits.
std::vector<std::string> listed_names(const StrategyRow& row);

// The whole-network plan storing every slot it can with the narrowest codec
// ("quantize-2"): a profile measures each layer's scratch under it
// (LayerProfile::stored).
const std::string& narrowest_codec_plan();

// The tensor grammar as errors spell it: "keep, invert, recompute,
// quantize-{8,4,2} (quantize-1 for masks), adaptive-N, swap, the last three
// joined by '+'".
std::string tensor_grammar();
// The whole-network plan names' grammar: "keep, recompute-all, ..., joined by '+' (e.g. ...)".
std::string plan_name_grammar();

// The planner's candidates, in the order it tries them: for a saved tensor's
// storage, and for a recomputed segment's input (both beside keeping it raw).
std::vector<std::string> storage_candidate_names();
std::vector<std::string> segment_input_candidate_names();

// The recompute row's second whole-network term: every attention core's
// softmax output recomputed (with the core, from q, k and v: Korthikanti et
// al.'s selective recompute), where "recompute-all" recomputes every segment.
constexpr const char* recompute_attention_term = "recompute-attention";

// PAPAYA's whole-network plan names, factor by factor: each factor's names
// ("recompute-all", "recompute-attention"; "quantize-8", ..., "adaptive-4";
// "invert"; "swap").
std::vector<std::vector<std::string>> plan_name_factors();
// The row of one term of a whole-network plan name ("recompute-all",
// "quantize-4"), nullptr if none.
const StrategyRow* plan_term_row(const std::string& term);

}  // namespace papaya::model
