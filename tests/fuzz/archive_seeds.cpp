// Writes the seeds of the archive harness (corpus/archive/): the C++-defined
// TorchScript fixtures of tests/executor/torchscript/fixtures.h saved as a
// user's archive, with and without papaya.json, every record stored rather
// than deflated, so that the fuzzer's byte mutations reach the pickles and
// the code (LibTorch's reader checks no CRC) instead of failing to inflate.
//   archive_seeds DIR
#include <torch/script.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/executor/torchscript/fixtures.h"

namespace ts = papaya::executor::torchscript::testing;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR: writes the archive harness's seeds into DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  torch::manual_seed(0);
  const auto seed = [&](const torch::jit::Module& m, const std::string& name, const torch::jit::ExtraFilesMap& extra) {
    ts::save_stored(m, (dir / (name + ".pt")).string(), extra);
  };
  seed(ts::small_cnn(), "small_cnn", {{"papaya.json", R"({"inputs": ["float32[B,3,8,8]"]})"}});
  seed(ts::small_cnn(true), "small_cnn_in_place", {});
  seed(ts::small_transformer(true), "small_transformer_loss",
       {{"papaya.json", R"({"inputs": ["int64[B,6]<16", "int64[B,6]<16"]})"}});
  seed(ts::positions_from_arange(), "positions_from_arange", {{"papaya.json", R"({"inputs": ["int64[B,8]<16"]})"}});
  seed(ts::pooled_batch_norm(), "pooled_batch_norm", {});
  std::printf("seeds written to %s\n", dir.c_str());
  return 0;
}
