#include <torch/version.h>

#include "cli/commands.h"
#include "executor/distributed/collectives.h"

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
  return std::string("papaya ") + PAPAYA_VERSION + " (LibTorch " + TORCH_VERSION + ", " + backend + gloo + ")";
}

}  // namespace papaya::cli
