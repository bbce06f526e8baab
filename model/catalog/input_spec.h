#pragma once
// The inputs of a network papaya did not build (a TorchScript archive): one
// spec per argument of its forward, in order, as `--input` and the archive's
// papaya.json spell them:
//   float32[B,3,224,224]     a tensor of that dtype and shape, B the batch
//   int64[B,128]<50257       token ids, each below the bound
// dtypes: float32, float64, float16, bfloat16, int64, int32, bool. No LibTorch.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace papaya::model {

struct InputSpec {
  std::string dtype;
  // Each dimension's size; the batch's is nullopt (exactly one is).
  std::vector<std::optional<int64_t>> dims;
  std::optional<int64_t> below;  // integer dtypes: values drawn in [0, below)

  bool integral() const;
  std::vector<int64_t> shape(int64_t batch) const;
  std::string text() const;  // as parsed
};

// InputError naming `where` ("--input", "model.pt: papaya.json /inputs/1")
// and what was expected.
InputSpec parse_input_spec(const std::string& text, const std::string& where);

}  // namespace papaya::model
