// The strategy table against what is derived from it: if a list or a text
// drifts from the table (or the table from what papaya did before it), one
// of these fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "model/error.h"
#include "model/plan.h"
#include "model/strategy_table.h"

namespace papaya::model {
namespace {

std::vector<std::string> spelled_rows() {
  std::vector<std::string> out;
  for (const auto& row : strategy_table()) out.push_back(row.spelled);
  return out;
}

// The first column of the README's table under "| strategy | ...".
std::vector<std::string> readme_strategies() {
  std::ifstream in(std::string(PAPAYA_SOURCE_DIR) + "/README.md");
  std::vector<std::string> out;
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.rfind("| strategy |", 0) == 0) {
      inside = true;
    } else if (inside && line.rfind("|---", 0) != 0) {
      if (line.rfind("| ", 0) != 0) break;
      out.push_back(line.substr(2, line.find(" |", 2) - 2));
    }
  }
  return out;
}

TEST(StrategyTable, TheReadmeListsItsStrategies) { EXPECT_EQ(readme_strategies(), spelled_rows()); }

TEST(StrategyTable, GrammarsInErrorsAreWordForWord) {
  EXPECT_EQ(tensor_grammar(),
            "keep, invert, recompute, quantize-{8,4,2} (quantize-1 for masks), adaptive-N, swap, the last three joined by '+'");
  EXPECT_EQ(plan_name_grammar(),
            "keep, recompute-all or recompute-attention, quantize-{8,4,2}, adaptive-N, invert, swap, joined by '+' (e.g. "
            "recompute-all+quantize-4)");
  EXPECT_TRUE(is_plan_name("recompute-all+quantize-4"));
  try {
    parse_tensor_strategy("zip", "t");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "t: 'zip': unknown term 'zip' (expected " + tensor_grammar() + ")");
  }
}

// The planner's search order decides its ties: its plans stay the same only
// with the same candidates in the same order.
TEST(StrategyTable, ThePlannerSearchesTheSameCandidates) {
  EXPECT_EQ(storage_candidate_names(),
            (std::vector<std::string>{"quantize-8", "quantize-4", "quantize-2", "adaptive-4", "invert", "recompute", "swap",
                                      "quantize-8+swap", "quantize-4+swap", "quantize-2+swap", "adaptive-4+swap"}));
  EXPECT_EQ(segment_input_candidate_names(), (std::vector<std::string>{"quantize-8", "quantize-4", "quantize-2", "swap",
                                                                       "quantize-8+swap", "quantize-4+swap", "quantize-2+swap"}));
  for (const auto& name : segment_input_candidate_names()) {
    const TensorStrategy input = parse_segment_strategy("recompute+" + name, "t").input;
    EXPECT_TRUE(input.swap || row_of(input.form).segment_input) << name;
  }
}

TEST(StrategyTable, EveryListedNameIsItsRowsAndParsesBack) {
  for (const auto& row : strategy_table()) {
    for (const auto& name : listed_names(row)) {
      const TensorStrategy s = parse_tensor_strategy(name, "t");
      EXPECT_EQ(s.name(), name);
      EXPECT_EQ(&(s.swap ? swap_row() : row_of(s.form)), &row) << name;
    }
  }
  for (const auto& name : storage_candidate_names()) EXPECT_EQ(parse_tensor_strategy(name, "t").name(), name);
}

TEST(StrategyTable, PapayasTableCrossesThePlanNameFactors) {
  EXPECT_EQ(plan_name_factors(), (std::vector<std::vector<std::string>>{{"recompute-all", "recompute-attention"},
                                                                        {"quantize-8", "quantize-4", "quantize-2", "adaptive-4"},
                                                                        {"invert"},
                                                                        {"swap"}}));
  size_t combinations = 1, without_swap = 1;
  for (const auto& factor : plan_name_factors()) {
    combinations *= factor.size() + 1;
    without_swap *= factor.size() + !plan_term_row(factor.front())->swaps;
    for (const auto& term : factor) EXPECT_TRUE(is_plan_name(term)) << term;
  }
  // As PAPAYA's table was written out by hand before the strategy table.
  std::vector<std::string> by_hand;
  for (const char* r : {"", "recompute-all", "recompute-attention"}) {
    for (const char* c : {"", "quantize-8", "quantize-4", "quantize-2", "adaptive-4"}) {
      for (const char* i : {"", "invert"}) {
        for (const char* s : {"", "swap"}) {
          std::string name;
          for (const char* term : {r, c, i, s}) {
            if (*term) name += (name.empty() ? "" : "+") + std::string(term);
          }
          by_hand.push_back(name.empty() ? "keep" : name);
        }
      }
    }
  }
  EXPECT_EQ(global_plan_names(true), by_hand);
  by_hand.erase(std::remove_if(by_hand.begin(), by_hand.end(), [](const auto& n) { return n.find("swap") != std::string::npos; }),
                by_hand.end());
  EXPECT_EQ(global_plan_names(false), by_hand);
  EXPECT_EQ(global_plan_names(true).size(), combinations);
  EXPECT_EQ(global_plan_names(false).size(), without_swap);
  for (const auto& name : global_plan_names(true)) EXPECT_TRUE(is_plan_name(name)) << name;
}

TEST(StrategyTable, OnlyQuantizationAndInversionAddVariance) {
  for (const auto& row : strategy_table()) {
    const bool lossy = row.form == Form::quantized || row.form == Form::adaptive || row.form == Form::inverted;
    EXPECT_EQ(row.variance_bits != 0, lossy && !row.swaps) << row.term;
  }
  TensorStrategy mask;
  mask.form = Form::quantized;
  mask.bits = 1;
  EXPECT_EQ(variance_bits(mask), 1);  // exact: one bit keeps a mask whole
  EXPECT_EQ(variance_bits(parse_tensor_strategy("invert", "t")), 8);
  EXPECT_EQ(variance_bits(parse_tensor_strategy("adaptive-3", "t")), 3);
}

TEST(StrategyTable, EncodingsAndCodecBits) {
  const TensorStrategy q4 = parse_tensor_strategy("quantize-4", "t"), inverted = parse_tensor_strategy("invert", "t");
  EXPECT_EQ(encoding(SlotKind::activation, q4), Encoding::quantized);
  EXPECT_EQ(encoding(SlotKind::mask, q4), Encoding::mask);
  EXPECT_EQ(encoding(SlotKind::activation, inverted), Encoding::mask);
  EXPECT_EQ(encoding(SlotKind::activation, parse_tensor_strategy("recompute", "t")), Encoding::none);
  EXPECT_EQ(encoding(SlotKind::activation, parse_tensor_strategy("swap", "t")), Encoding::raw);
  EXPECT_TRUE(is_packed(q4));
  EXPECT_EQ(codec_bits(q4), 4);
  EXPECT_EQ(codec_bits(inverted), 1);
  EXPECT_FALSE(is_packed(TensorStrategy{}));
  EXPECT_TRUE(row_of(Form::inverted).derivative_from_output);
}

}  // namespace
}  // namespace papaya::model
