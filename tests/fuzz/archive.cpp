// TorchScript archives (--network model.pt): what papaya does with one before
// it runs it, as archive_config does (load, the forward's signature, the input
// specs of papaya.json, the module tree). The seeds store every record, so
// mutations reach the zip's structure, the pickles and the code. LibTorch is
// not instrumented: the fuzzer is guided by papaya's side only.
#include <filesystem>

#include "executor/torchscript/archive.h"
#include "executor/torchscript/module_tree.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace papaya::executor::torchscript;
  // A file of its own for each input: load_archive checks each version of a
  // file once, and two inputs of one size written within a clock tick would
  // look like one.
  static int inputs = 0;
  const std::string path = papaya::fuzz::input_file(data, size, "network-" + std::to_string(inputs++) + ".pt");
  papaya::fuzz::accept_input_error([&] {
    const Archive archive = load_archive(path);
    forward_signature(archive);
    input_specs(archive, {}, "");
    module_tree(archive.module, path);
  });
  std::filesystem::remove(path);
  return 0;
}
