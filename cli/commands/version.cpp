#include <torch/version.h>

#include "cli/commands/commands.h"
#include "cli/process/host_allocator.h"
#include "executor/distributed/collectives.h"
#include "model/error.h"
#include "model/json_file.h"

#ifndef PAPAYA_VERSION
#error "PAPAYA_VERSION must be defined by the build"
#endif

namespace papaya::cli {

std::string version_string() {
#ifdef PAPAYA_CUDA
  const std::string backend = "CUDA";
#else
  const std::string backend = "CPU only";
#endif
  const std::string gloo = executor::Collectives::available() ? ", Gloo" : ", no Gloo";
  std::string data;
  try {
    data = model::config_dir();
  } catch (const InputError&) {
    data = "none found";
  }
  return std::string("papaya ") + PAPAYA_VERSION + " (LibTorch " + TORCH_VERSION + ", " + backend + gloo + ", " +
         host_allocator() + "; data: " + data + ")";
}

}  // namespace papaya::cli
