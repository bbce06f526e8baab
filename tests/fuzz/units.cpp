// The size and list options (--budget 24GiB, --batch 1,2,4): what parses must
// keep the parsers' promises (a positive size; positive integers).
#include <cstdio>
#include <cstdlib>

#include "model/units.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

void require(bool ok, const char* what, const std::string& text) {
  if (ok) return;
  std::fprintf(stderr, "%s: [%s]\n", what, text.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace papaya;
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::accept_input_error([&] { require(model::parse_size(text, "--budget") > 0, "parse_size gave no positive size", text); });
  fuzz::accept_input_error([&] {
    for (int value : model::parse_int_list(text, "--batch"))
      require(value > 0, "parse_int_list gave a non-positive integer", text);
  });
  return 0;
}
