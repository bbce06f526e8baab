#pragma once
// The one shape of every command: it computes a result, then shows it, as
// text for people (a headline, tables, notes) or, with --json, as one JSON
// document for scripts. A command's result type R comes with
//   void to_json(nlohmann::json&, const R&);       (nlohmann's conversion)
//   void print_text(std::ostream&, const R&);
// and the command's callback ends in show(result, *output).
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace papaya::cli {

// How a command shows its result: set by the options add_output_options
// registers, read once the command runs.
struct Output {
  bool json = false;
  // A line people see before the long work ends (what is being trained):
  // printed at once as text, left out of the JSON document.
  void headline(const std::string& text) const;
};

// Adds --json to `cmd`, `json_help` saying what the document holds.
std::shared_ptr<Output> add_output_options(CLI::App* cmd, const std::string& json_help = "One JSON document instead of a table");

template <class Result>
void show(const Result& result, const Output& output) {
  if (output.json) {
    std::cout << nlohmann::json(result).dump(2) << "\n";
  } else {
    print_text(std::cout, result);
  }
}

}  // namespace papaya::cli
