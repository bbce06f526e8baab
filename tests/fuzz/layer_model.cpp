// Fitted per-layer models (papaya predict/plan/limits model.json): read and
// checked as read_layer_model does, then the layout plans are checked against.
#include "model/layer_model.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace papaya;
  const std::string path = fuzz::input_file(data, size, "model.json");
  fuzz::accept_input_error([&] { model::read_layer_model(path).layout(); });
  return 0;
}
