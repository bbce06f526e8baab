// Profiles (papaya fit PROFILE): read, schema-checked and checked for
// consistency as read_profile does, then the layout plans are checked against.
#include "model/profile.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace papaya;
  const std::string path = fuzz::input_file(data, size, "profile.json");
  fuzz::accept_input_error([&] { model::read_profile(path).layout(); });
  return 0;
}
