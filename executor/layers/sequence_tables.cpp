#include "executor/layers/sequence_tables.h"

namespace papaya::executor {

const torch::Tensor& SequenceTables::causal_mask(int64_t n, const torch::Device& device) {
  if (!above_diagonal_.defined() || above_diagonal_.size(0) != n || above_diagonal_.device() != device) {
    above_diagonal_ = torch::ones({n, n}, torch::TensorOptions(device).dtype(torch::kBool)).triu(1);
  }
  return above_diagonal_;
}

std::pair<torch::Tensor, torch::Tensor> SequenceTables::rotary(int64_t tokens, int64_t dims, double base,
                                                               const model::RopeScaling& scaling, const torch::Device& device,
                                                               torch::ScalarType dtype) {
  const std::vector<double> frequencies = model::rotary_frequencies(static_cast<int>(dims), base, scaling, tokens);
  const double magnitude = model::rotary_magnitude(scaling);
  Angles& a = rotary_[{frequencies, magnitude}];
  if (!a.cos.defined() || a.cos.size(0) != tokens || a.cos.device() != device || a.cos.scalar_type() != dtype) {
    const auto fp32 = torch::TensorOptions(device).dtype(torch::kFloat);
    const torch::Tensor inverse_frequency = torch::tensor(frequencies, torch::kDouble).to(fp32);
    const torch::Tensor angles = torch::outer(torch::arange(tokens, fp32), inverse_frequency).repeat({1, 2});
    a.cos = angles.cos().mul_(magnitude).to(dtype);
    a.sin = angles.sin().mul_(magnitude).to(dtype);
  }
  return {a.cos, a.sin};
}

}  // namespace papaya::executor
