#include "executor/storage/weight_codec.h"

#include <array>
#include <cfloat>

namespace papaya::executor {
namespace {

using model::WeightFormat;

// NormalFloat4's levels (Dettmers et al., QLoRA, appendix E): the quantiles
// of a standard normal scaled to [-1, 1], with an exact zero.
constexpr std::array<float, 16> kNf4Levels = {
    -1.0f,         -0.6961928f, -0.52507305f, -0.3949175f, -0.28444138f, -0.18477343f, -0.091050036f, 0.0f,
    0.079580299f, 0.16093020f, 0.24611230f,  0.33791524f, 0.44070983f,  0.56261700f,  0.72295684f,   1.0f};

at::Tensor levels(const at::Device& device) {
  return torch::tensor(std::vector<float>(kNf4Levels.begin(), kNf4Levels.end()), torch::dtype(torch::kFloat).device(device));
}

// `flat` zero-padded to whole rows of `width`, viewed as those rows.
at::Tensor padded_rows(const at::Tensor& flat, int64_t width) {
  const int64_t rows = (flat.numel() + width - 1) / width;
  at::Tensor out = at::zeros({rows * width}, flat.options());
  out.narrow(0, 0, flat.numel()).copy_(flat);
  return out.view({rows, width});
}

void store_nf4(const at::Tensor& flat, StoredWeight& s) {
  const at::Tensor blocks = padded_rows(flat, model::nf4_block);
  const at::Tensor absmax = blocks.abs().amax(1);
  const at::Tensor level = levels(flat.device());
  const at::Tensor midpoints = (level.narrow(0, 1, 15) + level.narrow(0, 0, 15)) / 2;
  const at::Tensor index = at::bucketize(blocks / absmax.clamp_min(FLT_MIN).unsqueeze(1), midpoints).view({-1, 2});
  s.codes = (index.select(1, 0) * 16 + index.select(1, 1)).to(at::kByte);
  // The absmaxes, less their mean, as int8 codes of a step per 256.
  s.scale_offset = absmax.mean().reshape({1});
  const at::Tensor centered = padded_rows(absmax - s.scale_offset, model::nf4_absmax_block);
  s.scale_scales = (centered.abs().amax(1) / 127).clamp_min(FLT_MIN);
  s.scales = (centered / s.scale_scales.unsqueeze(1)).round().clamp(-127, 127).to(at::kChar).flatten().narrow(0, 0,
                                                                                                         absmax.numel());
  s.scales = s.scales.contiguous();
}

at::Tensor load_nf4(const StoredWeight& s) {
  const int64_t blocks = s.scales.numel();
  const at::Tensor absmax = s.scales.to(at::kFloat) *
                                s.scale_scales.repeat_interleave(model::nf4_absmax_block).narrow(0, 0, blocks) +
                            s.scale_offset;
  // Each byte's two levels at once: a 256 x 2 table indexed by the byte.
  const at::Tensor level = levels(s.codes.device());
  const at::Tensor byte = at::arange(256, at::TensorOptions().dtype(at::kLong).device(s.codes.device()));
  const at::Tensor pairs = at::stack({level.index_select(0, byte.div(16, "floor")), level.index_select(0, byte.remainder(16))}, 1);
  at::Tensor values = pairs.index_select(0, s.codes.to(at::kInt)).view({blocks, model::nf4_block});
  values.mul_(absmax.unsqueeze(1));
  return values.view({-1}).narrow(0, 0, s.numel());
}

}  // namespace

std::vector<std::pair<const char*, at::Tensor*>> StoredWeight::tensors() {
  std::vector<std::pair<const char*, at::Tensor*>> out{{"weight_codes", &codes}};
  if (scales.defined()) out.emplace_back("weight_scales", &scales);
  if (scale_scales.defined()) out.emplace_back("weight_scale_scales", &scale_scales);
  if (scale_offset.defined()) out.emplace_back("weight_scale_offset", &scale_offset);
  return out;
}

int64_t StoredWeight::bytes() const {
  int64_t n = 0;
  for (const at::Tensor* t : {&codes, &scales, &scale_scales, &scale_offset}) {
    if (t->defined()) n += static_cast<int64_t>(t->numel() * t->element_size());
  }
  return n;
}

int64_t StoredWeight::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

StoredWeight store_weight(const at::Tensor& weight, WeightFormat format) {
  const torch::NoGradGuard no_grad;
  StoredWeight s;
  s.format = format;
  s.shape = weight.sizes().vec();
  const at::Tensor w = weight.detach().to(at::kFloat);
  switch (format) {
    case WeightFormat::fp32: s.codes = w.clone(); break;
    case WeightFormat::bf16: s.codes = w.to(at::kBFloat16); break;
    case WeightFormat::int8:
      s.scales = (w.abs().amax(1) / 127).clamp_min(FLT_MIN);
      s.codes = (w / s.scales.unsqueeze(1)).round().clamp(-127, 127).to(at::kChar);
      break;
    case WeightFormat::nf4: store_nf4(w.flatten(), s); break;
  }
  return s;
}

at::Tensor load_weight(const StoredWeight& s, at::ScalarType dtype) {
  const torch::NoGradGuard no_grad;
  switch (s.format) {
    case WeightFormat::int8: return (s.codes.to(at::kFloat) * s.scales.unsqueeze(1)).to(dtype);
    case WeightFormat::nf4: return load_nf4(s).view(s.shape).to(dtype);
    default: return s.codes.to(dtype);
  }
}

}  // namespace papaya::executor
