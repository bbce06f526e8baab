#pragma once
// Errors that papaya reports to the user as one line with exit code 2:
// bad input (a malformed or unknown config, plan, profile or model file, an
// impossible request). Anything else that is thrown is a bug.
#include <stdexcept>
#include <string>

namespace papaya {

// `text` as one line of valid UTF-8: line breaks shown as \n and \r, other
// control characters and bytes that are no UTF-8 (a fuzzed config's 0xFF)
// as \xHH.
std::string printable_line(const std::string& text);

class InputError : public std::runtime_error {
 public:
  // Messages quote what the user wrote, which may hold line breaks (a JSON
  // string's "\n", an argument) or any bytes: they are shown escaped.
  explicit InputError(const std::string& message) : std::runtime_error(printable_line(message)) {}
};

}  // namespace papaya
