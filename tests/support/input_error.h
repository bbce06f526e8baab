#pragma once
// The message of the InputError a piece of code throws, for tests that check
// what a refusal names.
#include <functional>
#include <string>

#include "model/error.h"

namespace papaya::test_support {

// What `run` throws as an InputError; "" where it throws none.
inline std::string input_error_of(const std::function<void()>& run) {
  try {
    run();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace papaya::test_support
