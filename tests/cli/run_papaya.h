#pragma once
// Runs the papaya binary for end-to-end tests.
#include <string>

namespace papaya::testing {

struct Outcome {
  int code = -1;
  std::string out, err;
};

// `args` is passed through the shell after the binary's path.
Outcome run_papaya(const std::string& args);

}  // namespace papaya::testing
