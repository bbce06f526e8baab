// Hardware catalog entries: the input is the only entry of a catalog in a
// scratch config folder (its schemas the shipped ones), read as
// hardware_catalog does, then priced at each training precision.
#include <cstdlib>

#include "model/catalog/hardware.h"
#include "model/json_file.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace papaya;
  namespace fs = std::filesystem;
  static const bool catalog = [] {
    const fs::path shipped = fs::absolute(model::config_dir()), dir = fuzz::scratch_dir() / "configs";
    fs::create_directories(dir / "hardware");
    fs::create_directory_symlink(shipped / "schemas", dir / "schemas");
    return setenv("PAPAYA_DATA", dir.c_str(), 1) == 0;
  }();
  if (!catalog) std::abort();
  fuzz::input_file(data, size, "configs/hardware/entry.json");
  fuzz::accept_input_error([&] {
    for (const auto& spec : model::hardware_catalog()) {
      for (const char* precision : {"fp32", "bf16", "fp16"}) {
        fuzz::accept_input_error([&] { spec.peak_for(precision, true); });
        fuzz::accept_input_error([&] { spec.peak_for(precision, false); });
      }
    }
  });
  return 0;
}
