// Global models (the model.json of papaya fit --measurements): read and
// checked as load_global_model does, then fitted again as predict and limits do.
#include "model/fit/global_model.h"
#include "model/fit/global_predict.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace papaya;
  const std::string path = fuzz::input_file(data, size, "model.json");
  fuzz::accept_input_error([&] { model::predict_global(model::load_global_model(path), path, 64, std::nullopt); });
  return 0;
}
