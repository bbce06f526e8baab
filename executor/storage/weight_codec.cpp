#include "executor/storage/weight_codec.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <numeric>

namespace papaya::executor {
namespace {

using model::WeightFormat;

// NormalFloat4's levels (Dettmers et al., QLoRA, appendix E): the quantiles
// of a standard normal scaled to [-1, 1], with an exact zero.
constexpr std::array<float, 16> kNf4Levels = {-1.0f,         -0.6961928f, -0.52507305f, -0.3949175f, -0.28444138f, -0.18477343f,
                                              -0.091050036f, 0.0f,        0.079580299f, 0.16093020f, 0.24611230f,  0.33791524f,
                                              0.44070983f,   0.56261700f, 0.72295684f,  1.0f};

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

// Blocks coded or loaded at a time: the temporaries of a step stay a few MB
// whatever the weight's size (the host allocator keeps freed memory for
// reuse, so large temporaries of many sizes would pile up).
constexpr int64_t kBlocksAtOnce = 1 << 14;

// The nf4 codes and absmaxes of the blocks from `first_block` on, whose
// values `flat` holds (the weight's last block padded with zeros).
void code_nf4_blocks(const at::Tensor& flat, int64_t first_block, at::Tensor& codes, at::Tensor& absmax) {
  const int64_t blocks = (flat.numel() + model::nf4_block - 1) / model::nf4_block;
  const at::Tensor level = levels(flat.device());
  const at::Tensor midpoints = (level.narrow(0, 1, 15) + level.narrow(0, 0, 15)) / 2;
  for (int64_t first = 0; first < blocks; first += kBlocksAtOnce) {
    const int64_t count = std::min(kBlocksAtOnce, blocks - first);
    const int64_t from = first * model::nf4_block, values = std::min(count * model::nf4_block, flat.numel() - from);
    const at::Tensor chunk = padded_rows(flat.narrow(0, from, values), model::nf4_block);
    const at::Tensor chunk_absmax = chunk.abs().amax(1);
    absmax.narrow(0, first_block + first, count).copy_(chunk_absmax);
    const at::Tensor index = at::bucketize(chunk / chunk_absmax.clamp_min(FLT_MIN).unsqueeze(1), midpoints).view({-1, 2});
    codes.narrow(0, (first_block + first) * model::nf4_block / 2, count * model::nf4_block / 2)
        .copy_(index.select(1, 0) * 16 + index.select(1, 1));
  }
}

// The absmaxes, less their mean, as int8 codes of a step per 256.
void quantize_absmax(const at::Tensor& absmax, StoredWeight& s) {
  const int64_t blocks = absmax.numel();
  s.scale_offset = absmax.mean().reshape({1});
  const at::Tensor centered = padded_rows(absmax - s.scale_offset, model::nf4_absmax_block);
  s.scale_scales = (centered.abs().amax(1) / 127).clamp_min(FLT_MIN);
  s.scales = (centered / s.scale_scales.unsqueeze(1)).round().clamp(-127, 127).to(at::kChar).flatten().narrow(0, 0, blocks);
  s.scales = s.scales.contiguous();
}

// On the CPU: each byte's two levels times its block's absmax, in one pass,
// written in the output's type; the last block's padding is not written.
template <typename T>
void load_nf4_cpu(const at::Tensor& codes, const at::Tensor& absmax, T* out, int64_t numel) {
  const uint8_t* in = codes.data_ptr<uint8_t>();
  const float* scale = absmax.data_ptr<float>();
  at::parallel_for(0, absmax.numel(), 256, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const float a = scale[b];
      const int64_t last = std::min((b + 1) * model::nf4_block, numel);
      for (int64_t v = b * model::nf4_block; v < last; v += 2) {
        const uint8_t byte = in[v / 2];
        out[v] = static_cast<T>(kNf4Levels[byte >> 4] * a);
        if (v + 1 < last) out[v + 1] = static_cast<T>(kNf4Levels[byte & 15] * a);
      }
    }
  });
}

// The stored nf4 weight into `out` (its numel values, contiguous).
void load_nf4(const StoredWeight& s, at::Tensor& out) {
  const int64_t blocks = s.scales.numel();
  const at::Tensor absmax =
      (s.scales.to(at::kFloat) * s.scale_scales.repeat_interleave(model::nf4_absmax_block).narrow(0, 0, blocks) + s.scale_offset)
          .contiguous();
  if (s.codes.device().is_cpu()) {
    const at::Tensor codes = s.codes.contiguous();
    if (out.scalar_type() == at::kBFloat16) {
      load_nf4_cpu(codes, absmax, out.data_ptr<at::BFloat16>(), out.numel());
    } else {
      TORCH_CHECK(out.scalar_type() == at::kFloat, "nf4 weights load in fp32 or bf16 on the CPU");
      load_nf4_cpu(codes, absmax, out.data_ptr<float>(), out.numel());
    }
    return;
  }
  // Each byte's two levels at once: a 256 x 2 table indexed by the byte; a
  // chunk's values made in fp32, then written into `out` (its padding not).
  const at::Tensor level = levels(s.codes.device());
  const at::Tensor byte = at::arange(256, at::TensorOptions().dtype(at::kLong).device(s.codes.device()));
  const at::Tensor pairs =
      at::stack({level.index_select(0, byte.div(16, "floor")), level.index_select(0, byte.remainder(16))}, 1);
  for (int64_t first = 0; first < blocks; first += kBlocksAtOnce) {
    const int64_t count = std::min(kBlocksAtOnce, blocks - first), from = first * model::nf4_block;
    const at::Tensor chunk = pairs.index_select(0, s.codes.narrow(0, from / 2, count * model::nf4_block / 2).to(at::kLong))
                                 .view({count, model::nf4_block});
    chunk.mul_(absmax.narrow(0, first, count).unsqueeze(1));
    const int64_t valid = std::min(count * model::nf4_block, out.numel() - from);
    out.narrow(0, from, valid).copy_(chunk.view(-1).narrow(0, 0, valid));
  }
}

// The stored weight into `out` (its numel values in the load's type).
void load_into(const StoredWeight& s, at::Tensor& out) {
  const torch::NoGradGuard no_grad;
  switch (s.format) {
    case WeightFormat::int8: {
      // A few rows at a time: no fp32 temporary of the whole weight.
      const int64_t rows = s.shape.at(0), cols = s.numel() / rows, step = std::max<int64_t>(1, (int64_t{1} << 20) / cols);
      const at::Tensor matrix = out.view({rows, cols});
      for (int64_t first = 0; first < rows; first += step) {
        const int64_t count = std::min(step, rows - first);
        matrix.narrow(0, first, count)
            .copy_(s.codes.narrow(0, first, count).to(at::kFloat).mul_(s.scales.narrow(0, first, count).unsqueeze(1)));
      }
      break;
    }
    case WeightFormat::nf4: load_nf4(s, out); break;
    default: out.copy_(s.codes.flatten()); break;
  }
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

StoredWeight store_weight(int64_t rows, int64_t cols, WeightFormat format, const RowsOf& rows_of) {
  const torch::NoGradGuard no_grad;
  StoredWeight s;
  s.format = format;
  s.shape = {rows, cols};
  // About 2^20 values a chunk, in whole nf4 blocks.
  const int64_t aligned = model::nf4_block / std::gcd(cols, model::nf4_block);
  const int64_t step = std::max<int64_t>(1, (int64_t{1} << 20) / cols / aligned) * aligned;
  at::Tensor absmax;  // nf4: each block's
  for (int64_t first = 0; first < rows; first += step) {
    const int64_t count = std::min(step, rows - first);
    const at::Tensor w = rows_of(first, count).detach().to(at::kFloat);
    const at::TensorOptions on = w.options();
    switch (format) {
      case WeightFormat::fp32:
      case WeightFormat::bf16:
        if (!s.codes.defined())
          s.codes = at::empty({rows, cols}, on.dtype(format == WeightFormat::bf16 ? at::kBFloat16 : at::kFloat));
        s.codes.narrow(0, first, count).copy_(w);
        break;
      case WeightFormat::int8: {
        if (!s.codes.defined()) {
          s.codes = at::empty({rows, cols}, on.dtype(at::kChar));
          s.scales = at::empty({rows}, on);
        }
        const at::Tensor scale = (w.abs().amax(1) / 127).clamp_min(FLT_MIN);
        s.scales.narrow(0, first, count).copy_(scale);
        s.codes.narrow(0, first, count).copy_((w / scale.unsqueeze(1)).round().clamp(-127, 127));
        break;
      }
      case WeightFormat::nf4: {
        const int64_t blocks = (rows * cols + model::nf4_block - 1) / model::nf4_block;
        if (!s.codes.defined()) {
          s.codes = at::empty({blocks * model::nf4_block / 2}, on.dtype(at::kByte));
          absmax = at::empty({blocks}, on);
        }
        code_nf4_blocks(w.flatten(), first * cols / model::nf4_block, s.codes, absmax);
        break;
      }
    }
  }
  if (format == WeightFormat::nf4) quantize_absmax(absmax, s);
  return s;
}

StoredWeight store_weight(const at::Tensor& weight, WeightFormat format) {
  return store_weight(weight.size(0), weight.size(1), format,
                      [&](int64_t first, int64_t count) { return weight.narrow(0, first, count); });
}

at::Tensor load_weight(const StoredWeight& s, at::ScalarType dtype) {
  at::Tensor out = at::empty({s.numel()}, s.codes.options().dtype(dtype));
  load_into(s, out);
  return out.view(s.shape);
}

at::Tensor LoadScratch::load(const StoredWeight& s, at::ScalarType dtype) {
  const int64_t bytes = s.numel() * static_cast<int64_t>(c10::elementSize(dtype));
  if (!buffer_.defined() || buffer_.numel() < bytes || buffer_.device() != s.codes.device()) {
    buffer_ = at::Tensor();  // the old one goes first
    buffer_ = at::empty({bytes}, s.codes.options().dtype(at::kByte));
  }
  at::Tensor out = buffer_.narrow(0, 0, bytes).view(dtype);
  load_into(s, out);
  return out.view(s.shape);
}

}  // namespace papaya::executor
