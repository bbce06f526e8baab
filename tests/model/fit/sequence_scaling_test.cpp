// The sequence-length axis (model/fit/sequence_scaling.h): a network profiled at
// three short lengths and modelled at a longer one, against the same network
// profiled at that length. The bytes every tensor holds are polynomials in
// the tokens, so the layers' descriptions and the bytes held at each layer's
// start must come out as the longer profile's; a layer's transient scratch
// (an algorithm's workspace) need not, and bounds what the peaks may miss.
#include <gtest/gtest.h>

#include "model/catalog/network_config.h"
#include "model/error.h"
#include "model/fit/sequence_scaling.h"
#include "tests/support/quick_fit.h"

namespace papaya::profiler {
namespace {

constexpr int batch = 16;

struct Lengths {
  std::string network;
  int short_lengths[3];
  int target;
};

class SequenceLength : public ::testing::TestWithParam<Lengths> {};

TEST_P(SequenceLength, ThreeShortProfilesGiveTheLongOnesBytes) {
  const Lengths& p = GetParam();
  std::vector<model::ModelAtLength> short_ones;
  for (const int length : p.short_lengths) short_ones.push_back({length, quick_fit(p.network, length)});
  const model::LayerModel scaled = model::at_sequence_length(short_ones, p.target, "test");
  const model::LayerModel whole = quick_fit(p.network, p.target);

  ASSERT_TRUE(same_layer_descriptions(scaled, whole));
  expect_bytes_as_profiled(scaled, whole, batch);
}

// llama-tiny: rotary positions, any length; bert-hf-tiny: a learned table of
// 40 rows, token types and a pooler (per-sample tensors of no token).
INSTANTIATE_TEST_SUITE_P(Cpu, SequenceLength,
                         ::testing::Values(Lengths{"llama-tiny", {8, 16, 32}, 64}, Lengths{"bert-hf-tiny", {8, 16, 24}, 40}),
                         [](const auto& info) { return info.param.network.substr(0, info.param.network.find('-')); });

TEST(SequenceLength, ThreeDistinctLengthsOfOneNetwork) {
  const model::LayerModel at8 = quick_fit("llama-tiny", 8), at16 = quick_fit("llama-tiny", 16);
  EXPECT_THROW(model::at_sequence_length({{8, at8}, {16, at16}}, 64, "test"), InputError);
  EXPECT_THROW(model::at_sequence_length({{8, at8}, {16, at16}, {16, at16}}, 64, "test"), InputError);
  try {
    model::at_sequence_length({{8, at8}, {16, at16}, {32, quick_fit("gpt-tiny", 32)}}, 64, "test");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the models differ at"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace papaya::profiler
