// Layout files (papaya train --layout FILE): a layout search's JSON or a
// plan file made for data-parallel GPUs, read as train reads them, checked
// against the network it names (llama-tiny here), and a plan file's GPUs as
// train --plan asks for them.
#include "model/catalog/network_config.h"
#include "tests/fuzz/fuzz_input.h"
#include "workflow/training/layout_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace papaya;
  static const model::NetworkConfig network = model::load_network_config("llama-tiny");
  const std::string path = fuzz::input_file(data, size, "layout.json");
  fuzz::accept_input_error([&] { workflow::check_made_for(workflow::read_layout_file(path), network, path); });
  workflow::gpus_planned_for(path);
  return 0;
}
