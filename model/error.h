#pragma once
// Errors that papaya reports to the user as one line with exit code 2:
// bad input (a malformed or unknown config, plan, profile or model file, an
// impossible request). Anything else that is thrown is a bug.
#include <stdexcept>
#include <string>

namespace papaya {

class InputError : public std::runtime_error {
 public:
  // Messages quote what the user wrote, which may hold line breaks (a JSON
  // string's "\n", an argument): they are shown escaped, keeping one line.
  explicit InputError(const std::string& message) : std::runtime_error(one_line(message)) {}

 private:
  static std::string one_line(const std::string& text) {
    std::string out;
    for (char c : text) out += c == '\n' ? "\\n" : c == '\r' ? "\\r" : std::string(1, c);
    return out;
  }
};

}  // namespace papaya
