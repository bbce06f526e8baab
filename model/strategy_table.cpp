#include "model/strategy_table.h"

#include <algorithm>
#include <iterator>

namespace papaya::model {
namespace {

std::string joined(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

const char* number_word(size_t n) {
  static const char* words[] = {"no", "one", "two", "three", "four", "five", "six"};
  return n < std::size(words) ? words[n] : "many";
}

// The names of the rows `wanted` marks, in the order the planner tries them:
// each row's names, swap alone, then those searched with swap joined with it.
std::vector<std::string> candidates(bool StrategyRow::*wanted) {
  std::vector<std::string> alone, swapped;
  for (const auto& row : strategy_table()) {
    if (!(row.*wanted) || row.swaps) continue;
    for (const auto& name : listed_names(row)) {
      alone.push_back(name);
      if (row.searched_with_swap) swapped.push_back(name + "+" + swap_row().term);
    }
  }
  if (swap_row().*wanted) alone.push_back(swap_row().term);
  alone.insert(alone.end(), swapped.begin(), swapped.end());
  return alone;
}

}  // namespace

const std::vector<StrategyRow>& strategy_table() {
  // clang-format off
  static const std::vector<StrategyRow> rows = {
      // term         bits   spelled             note                       form               swaps  compresses encoding            deriv. variance listed     searched w/swap seg.in plan term          factor
      {"keep",        false, "keep",             "",                        Form::raw,         false, false,     Encoding::raw,       false, 0,       {},          false,   false, false, "keep",            -1},
      {"quantize",    true,  "quantize-{8,4,2}", " (quantize-1 for masks)", Form::quantized,   false, true,      Encoding::quantized, false, -1,      {8, 4, 2},   true,    true,  true,  "quantize",        1},
      {"adaptive",    true,  "adaptive-N",       "",                        Form::adaptive,    false, true,      Encoding::quantized, false, -1,      {4},         true,    true,  false, "adaptive",        1},
      // The derivative from an approximate inverse of GELU/SiLU: counted as 8-bit rounding of its input.
      {"invert",      false, "invert",           "",                        Form::inverted,    false, false,     Encoding::mask,      true,  8,       {},          true,    false, false, "invert",          2},
      // A tensor: the LM head's log-probabilities; a whole network: every segment too.
      {"recompute",   false, "recompute",        "",                        Form::recomputed,  false, false,     Encoding::none,      false, 0,       {},          true,    false, false, "recompute-all",   0},
      {"swap",        false, "swap",             "",                        Form::raw,         true,  false,     Encoding::raw,       false, 0,       {},          true,    false, true,  "swap",            3},
  };
  // clang-format on
  return rows;
}

const StrategyRow& row_of(Form form) {
  const auto& rows = strategy_table();
  return *std::find_if(rows.begin(), rows.end(), [&](const StrategyRow& r) { return r.form == form && !r.swaps; });
}

const StrategyRow& swap_row() {
  const auto& rows = strategy_table();
  return *std::find_if(rows.begin(), rows.end(), [](const StrategyRow& r) { return r.swaps; });
}

std::vector<std::string> listed_names(const StrategyRow& row) {
  if (!row.takes_bits) return {row.term};
  std::vector<std::string> names;
  for (int bits : row.listed_bits) names.push_back(std::string(row.term) + "-" + std::to_string(bits));
  return names;
}

const std::string& narrowest_codec_plan() {
  static const std::string name = listed_names(row_of(Form::quantized)).back();
  return name;
}

std::string tensor_grammar() {
  // Those that combine with nothing, then those joined by '+'.
  std::vector<std::string> alone, joining;
  for (const auto& row : strategy_table()) {
    (row.compresses || row.swaps ? joining : alone).push_back(std::string(row.spelled) + row.note);
  }
  return joined(alone, ", ") + ", " + joined(joining, ", ") + ", the last " + number_word(joining.size()) + " joined by '+'";
}

std::string plan_name_grammar() {
  std::vector<const StrategyRow*> rows;
  for (const auto& row : strategy_table()) {
    if (row.plan_term) rows.push_back(&row);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto* a, const auto* b) { return a->plan_factor < b->plan_factor; });
  std::vector<std::string> spelled;
  for (const auto* row : rows) {
    spelled.push_back(row->takes_bits ? row->spelled : row->plan_term);
    if (row->form == Form::recomputed) spelled.back() += " or " + std::string(recompute_attention_term);
  }
  return joined(spelled, ", ") + ", joined by '+' (e.g. recompute-all+quantize-4)";
}

std::vector<std::string> storage_candidate_names() { return candidates(&StrategyRow::searched); }

std::vector<std::string> segment_input_candidate_names() { return candidates(&StrategyRow::segment_input); }

std::vector<std::vector<std::string>> plan_name_factors() {
  std::vector<std::vector<std::string>> factors;
  for (const auto& row : strategy_table()) {
    if (row.plan_factor < 0) continue;
    if (factors.size() <= static_cast<size_t>(row.plan_factor)) factors.resize(static_cast<size_t>(row.plan_factor) + 1);
    auto& names = factors[static_cast<size_t>(row.plan_factor)];
    if (row.takes_bits) {
      for (const auto& name : listed_names(row)) names.push_back(name);
    } else {
      names.push_back(row.plan_term);
      if (row.form == Form::recomputed) names.push_back(recompute_attention_term);
    }
  }
  return factors;
}

const StrategyRow* plan_term_row(const std::string& term) {
  for (const auto& row : strategy_table()) {
    if (!row.plan_term) continue;
    const std::string prefix = std::string(row.plan_term) + "-";
    if (row.takes_bits ? term.rfind(prefix, 0) == 0 : term == row.plan_term) return &row;
    if (row.form == Form::recomputed && term == recompute_attention_term) return &row;
  }
  return nullptr;
}

}  // namespace papaya::model
