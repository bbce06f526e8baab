#pragma once
// Aligned text tables for people (--json is for scripts).
#include <iosfwd>
#include <string>
#include <vector>

namespace papaya::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header);
  // Columns whose cells are numbers are right-aligned.
  void add_row(std::vector<std::string> cells);
  void print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// "12.3" with `digits` decimals.
std::string fixed(double value, int digits = 1);

// A rate (samples/s) to three significant digits, however small: "1791",
// "166", "12.3", "2.35", "0.0123" (never "0.0" for a slow step).
std::string per_second(double value);

// A prediction's error relative to the measurement, signed: "+1.2%", "-0.4%".
double error_fraction(double predicted, double measured);
std::string error_percent(double predicted, double measured);

}  // namespace papaya::cli
