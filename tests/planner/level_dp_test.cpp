// The level program on instances small enough to work out by hand.
#include <gtest/gtest.h>

#include <limits>

#include "planner/level_dp.h"

namespace papaya::planner {
namespace {

constexpr double none = -std::numeric_limits<double>::infinity();

Effect saving(double far, double seconds) {
  Effect e;
  e.far = far;
  e.objective = seconds;
  return e;
}

// Three layers; keep is 10 bytes over the budget at the last backward.
Program three_levels() {
  Program p;
  p.levels.resize(3);
  for (auto& l : p.levels) {
    l.need = {-100, -100, 0};
    l.choices = {Effect{}};
  }
  p.levels[2].need[backward_point] = 10;
  return p;
}

TEST(LevelProgram, KeepWhenNothingIsNeeded) {
  Program p = three_levels();
  p.levels[2].need[backward_point] = -1;
  p.levels[0].choices = {Effect{}, saving(-50, 1)};
  const auto c = solve(p, 64);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->level_choice, (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(c->objective, 0);
}

TEST(LevelProgram, TheCheapestSetOfSavingsThatIsEnough) {
  // Save 10 bytes: 6 + 5 (cost 2 + 2) beats 12 (cost 5) and 6 alone is short.
  Program p = three_levels();
  p.levels[0].choices = {Effect{}, saving(-6, 2), saving(-12, 5)};
  p.levels[1].choices = {Effect{}, saving(-5, 2)};
  p.levels[2].choices = {Effect{}};
  const auto c = solve(p, 64);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->level_choice, (std::vector<int>{1, 1, 0}));
  EXPECT_DOUBLE_EQ(c->objective, 4);
  p.levels[1].choices[1].objective = 4;  // now 12 alone is cheaper
  EXPECT_EQ(solve(p, 64)->level_choice, (std::vector<int>{2, 0, 0}));
}

TEST(LevelProgram, NearBytesAreCheckedWhereTheyAre) {
  // Level 1's option saves 20 beyond the next levels but, at its own
  // backward, holds 15 more than keep (a dequantized copy); its backward
  // needs -10: 15 over. The far saving of level 0 must cover it.
  Program p = three_levels();
  p.levels[1].need[backward_point] = -10;
  Effect packed = saving(-20, 1);
  packed.near[0][backward_point] = 35;  // -20 + 35 = +15 at its own backward
  p.levels[1].choices = {Effect{}, packed};
  p.levels[0].choices = {Effect{}, saving(-4, 3), saving(-6, 7)};
  p.levels[2].choices = {Effect{}};
  const auto c = solve(p, 64);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->level_choice, (std::vector<int>{2, 1, 0}));  // -6 + 15 = 9 > -10 + ... : 15 - 6 - 10 = -1
  p.levels[0].choices.pop_back();                           // -4 alone leaves 15 - 4 - 10 = 1 over
  EXPECT_FALSE(solve(p, 64));
}

TEST(LevelProgram, ASegmentReplacesTheChoicesInsideIt) {
  // Levels 1-2 form a segment; recomputing it saves 30 at later levels at
  // cost 3, against two options inside it that save 10 at cost 1 each.
  Program p = three_levels();
  p.levels.push_back(Level{{-100, 25, 0}, {Effect{}}});  // level 3 needs 25
  p.levels[0].choices = {Effect{}};
  p.levels[1].choices = {Effect{}, saving(-10, 1)};
  p.levels[2].choices = {Effect{}, saving(-10, 1)};
  p.levels[2].need[backward_point] = -100;
  Recompute r;
  for (auto& slots : r.inside) slots = {none, none, none};
  r.inside_far = none;
  r.far = -30;
  r.objective = 3;
  p.segments.push_back({1, 2, {r}});
  auto c = solve(p, 128);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->recompute, (std::vector<int>{0}));
  EXPECT_EQ(c->level_choice, (std::vector<int>{0, 0, 0, 0}));
  EXPECT_DOUBLE_EQ(c->objective, 3);
  // Its rematerialization over the budget inside: not allowed.
  p.segments[0].options[0].inside[1][recompute_points] = 1;
  EXPECT_FALSE(solve(p, 128));
  // Enough: the two options inside (20) for 15.
  p.levels[3].need[backward_point] = 15;
  p.segments[0].options[0].inside[1][recompute_points] = none;
  c = solve(p, 128);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->recompute, (std::vector<int>{-1}));
  EXPECT_EQ(c->level_choice, (std::vector<int>{0, 1, 1, 0}));
}

TEST(LevelProgram, ChecksUseExactBytesNotBuckets) {
  // Two buckets of 10 bytes: a saving of 9.999 falls in the first, and is
  // not enough however its bucket rounds.
  Program p = three_levels();
  p.levels[0].choices = {Effect{}, saving(-9.999, 1), saving(-10, 5)};
  const auto c = solve(p, 2);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->level_choice[0], 2);
}

}  // namespace
}  // namespace papaya::planner
