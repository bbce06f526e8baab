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

// A long time in the unit that reads best: "48 s", "12.5 min", "3.4 h", "12.3 days".
std::string duration_text(double seconds);

// A large count to three significant digits: "950", "12.5k", "300M", "2B", "1.5T".
std::string count_text(double count);

// An amount of US dollars: cents below $100 ("$2.45"), else whole, its
// thousands grouped ("$1,234,567").
std::string usd_text(double usd);

// A prediction's error relative to the measurement, signed: "+1.2%", "-0.4%".
double error_fraction(double predicted, double measured);
std::string error_percent(double predicted, double measured);

}  // namespace papaya::cli
