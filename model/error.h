#pragma once
// Errors that papaya reports to the user as one line with exit code 2:
// bad input (a malformed or unknown config, plan, profile or model file, an
// impossible request). Anything else that is thrown is a bug.
#include <stdexcept>
#include <string>

namespace papaya {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace papaya
