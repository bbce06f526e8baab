#pragma once
// Small synthetic networks for the planner's tests, built like
// tests/support/synthetic_profile.h's gpt_like: the test chooses each layer's
// saved tensors and sizes, and the keep step's figures follow one simple
// allocation rule, so that every strategy has something to save.
#include <string>
#include <vector>

#include "model/layer_model.h"
#include "tests/support/synthetic_profile.h"

namespace papaya::testing {

struct ChainLayer {
  std::string path, kind, segment;
  std::vector<model::SavedTensorProfile> saved;
  double output_bytes_per_sample = 0;
  std::vector<std::string> output_saved_by;
};

// A profile of layers run one after another: keep figures are static + the
// storages saved so far (from their first saver's forward to its backward) +
// the layer's input and output (forward) or output gradients (backward);
// times grow with the output size. Each segment's input is its first layer's
// first saved tensor.
ProfileSpec chain(const std::vector<ChainLayer>& layers, double static_bytes);

// fc1 -> gelu -> fc2 (one segment, "block") -> dropout -> head: four storages
// with options (fc1 and fc2 inputs, the GELU input, the dropout mask) and one segment.
ProfileSpec tiny_block();

// A network of `layers` linear layers of random widths (seeded), with a GELU
// every third and segments of three: for randomized checks.
ProfileSpec random_chain(int layers, unsigned seed);

// The fitted model of a spec, on the CPU or on a GPU with a host link.
model::LayerModel fitted(ProfileSpec spec, bool gpu);

}  // namespace papaya::testing
