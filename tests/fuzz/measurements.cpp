// Measured runs (papaya fit --measurements FILE.csv), parsed from a stream
// as read_measurements does.
#include <sstream>

#include "model/fit/measurements.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace papaya;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  fuzz::accept_input_error([&] { model::parse_measurements(in, "fuzz.csv"); });
  return 0;
}
