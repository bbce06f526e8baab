#pragma once
// Range checks of numeric options whose error is one short line saying what
// is allowed: "--batch: must be a whole number of at least 1 (got 0)" (a
// value that is no number, or out of range, alike). Each takes the option's
// variable for its type alone: an integer option takes whole numbers only.
#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace papaya::cli {

namespace number_checks_detail {
template <typename T>
struct Element {
  using type = T;
};
template <typename T>
struct Element<std::optional<T>> {
  using type = T;
};
template <typename T>
struct Element<std::vector<T>> {
  using type = T;
};
template <typename T>
constexpr bool whole = std::is_integral_v<typename Element<T>::type>;
}  // namespace number_checks_detail

// A number from `low` to `high` (either end may be open: `low_open` makes
// it "above low"), a whole one where `whole`.
CLI::Validator number_check(bool whole, double low, bool low_open, double high);

// Above 0 (a whole number: at least 1).
template <typename T>
CLI::Validator positive(const T&) {
  constexpr bool whole = number_checks_detail::whole<T>;
  return number_check(whole, whole ? 1 : 0, !whole, HUGE_VAL);
}
// At least 0.
template <typename T>
CLI::Validator non_negative(const T&) {
  return number_check(number_checks_detail::whole<T>, 0, false, HUGE_VAL);
}
// From `low` to `high`, both included.
template <typename T>
CLI::Validator within(const T&, double low, double high) {
  return number_check(number_checks_detail::whole<T>, low, false, high);
}

}  // namespace papaya::cli
