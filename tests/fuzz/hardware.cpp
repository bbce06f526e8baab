// Hardware catalog entries: the input is the only entry of a catalog in a
// scratch config folder (its schemas the shipped ones), read as
// hardware_catalog does, then priced at each training precision, and its
// kernel model's figures (measured ones too: a calibrated entry) used to
// time a product, attention and a memory pass, which must be finite and not
// negative.
#include <cmath>
#include <cstdlib>

#include "model/catalog/hardware.h"
#include "model/catalog/kernel_model.h"
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
        fuzz::accept_input_error([&] {
          const double peak = spec.peak_for(precision, false);
          const model::KernelModel& k = spec.kernels;
          const model::MatmulPath path{peak, k.matmul_efficiency_for(precision), 2};
          for (const double seconds : {model::matmul_seconds(k, path, 4096, 1000, 64, spec.memory_bandwidth),
                                       model::batched_matmul_seconds(k, path, 24, 512, 512, 64, spec.memory_bandwidth),
                                       model::attention_seconds(k, 1e12, 64, 2048, true, peak),
                                       model::memory_pass_seconds(k, 1e8, spec.memory_bandwidth)}) {
            if (!std::isfinite(seconds) || seconds < 0) std::abort();
          }
        });
      }
    }
  });
  return 0;
}
