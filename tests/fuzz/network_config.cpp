// Network configs (--network FILE): read, schema-checked and parsed as
// load_network_config does, then the figures the executor derives from them.
#include "model/catalog/network_config.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace papaya;
  const std::string path = fuzz::input_file(data, size, "network.json");
  fuzz::accept_input_error([&] {
    const model::NetworkConfig config = model::load_network_config(path);
    config.sequence_length();
    if (config.family != model::Family::resnet && config.family != model::Family::mlp) {
      config.transformer().head_dim();
      config.transformer().mlp_hidden();
    }
  });
  return 0;
}
