// Plan files (--plan FILE) and plan names (--plan NAME), checked against the
// layout of a GPT-like network as deep as the shipped gpt-tiny (its layer and
// slot names are the executor's), as papaya train and predict do.
#include "model/plan.h"
#include "model/catalog/network_config.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/support/synthetic_profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace papaya;
  static const model::NetworkLayout layout = [] {
    const int blocks = model::load_network_config("gpt-tiny").transformer().layers;
    return testing::make_profile(testing::gpt_like(blocks)).layout();
  }();
  const std::string path = fuzz::input_file(data, size, "plan.json");
  fuzz::accept_input_error([&] { model::load_plan(path, layout, "gpt-tiny"); });
  const std::string name(reinterpret_cast<const char*>(data), size);
  fuzz::accept_input_error([&] { model::expand_plan_name(name, layout); });
  return 0;
}
