#include "executor/storage/codec.h"

#include <algorithm>

#include "executor/storage/rounding.h"

#ifdef PAPAYA_CUDA
#include "executor/storage/codec_cuda.h"
#endif

namespace papaya::executor {
namespace {

// Values handled per ATen pass: bounds the temporaries of the portable path
// (a few times 64 KiB), which would otherwise rival the savings on small networks.
constexpr int64_t chunk_values = int64_t{1} << 14;

// codes (n, G) uint8 < 2^bits -> (n, G*bits/8) bytes.
at::Tensor pack_codes(const at::Tensor& codes, int bits) {
  if (bits == 8) return codes;
  const int per_byte = 8 / bits;
  const at::Tensor c = codes.view({codes.size(0), -1, per_byte});
  at::Tensor packed = c.select(2, 0).clone();
  for (int j = 1; j < per_byte; ++j) packed.bitwise_or_(at::bitwise_left_shift(c.select(2, j), bits * j));
  return packed;
}

// (n, G*bits/8) bytes -> codes (n, G) uint8.
at::Tensor unpack_codes(const at::Tensor& packed, int bits) {
  if (bits == 8) return packed;
  const at::Tensor shifts = at::arange(0, 8, bits, packed.options());
  return at::bitwise_right_shift(packed.unsqueeze(-1), shifts).bitwise_and_((1 << bits) - 1).view({packed.size(0), -1});
}

// `v` (fp32) rounded to a bf16 value toward +inf (`up`) or -inf: its low 16
// bits cleared, after raising its magnitude by one bf16 step where that
// direction is away from zero. The CUDA kernels round the same way.
at::Tensor round_to_bf16(const at::Tensor& v, bool up) {
  const at::Tensor bits = v.contiguous().view(at::kInt);
  return at::where(up ? v > 0 : v < 0, bits + 0xFFFF, bits).bitwise_and_(~0xFFFF).view(at::kFloat);
}

// The buffer's views, as (heads, groups per head, ...).
struct BufferViews {
  at::Tensor codes, mins, scales;
  BufferViews(const at::Tensor& buffer, const QuantLayout& l) {
    const int64_t code_bytes = l.groups() * l.code_bytes_per_group();
    codes = buffer.narrow(0, 0, code_bytes).view({l.heads(), l.groups_per_head(), l.code_bytes_per_group()});
    const at::Tensor meta = buffer.narrow(0, code_bytes, l.groups() * model::quantized_range_bytes).view(at::kBFloat16);
    mins = meta.narrow(0, 0, l.groups()).view({l.heads(), l.groups_per_head()});
    scales = meta.narrow(0, l.groups(), l.groups()).view({l.heads(), l.groups_per_head()});
  }
};

// Calls piece(h0, rows, g0, count, width) over the layout in pieces of about
// chunk_values values: heads [h0, h0+rows), their groups [g0, g0+count), of
// which the last holds `width` values (G unless it is a head's padded tail).
template <typename Piece>
void for_each_piece(const QuantLayout& l, Piece piece) {
  const int64_t g = l.group_size;
  const int64_t full = l.head_numel / g, tail = l.head_numel % g;
  const int64_t heads = l.heads();
  if (full > 0) {
    if (l.head_numel <= chunk_values) {
      const int64_t rows = std::max<int64_t>(1, chunk_values / l.head_numel);
      for (int64_t h = 0; h < heads; h += rows) piece(h, std::min(rows, heads - h), 0, full, g);
    } else {
      const int64_t count = std::max<int64_t>(1, chunk_values / g);
      for (int64_t h = 0; h < heads; ++h) {
        for (int64_t k = 0; k < full; k += count) piece(h, 1, k, std::min(count, full - k), g);
      }
    }
  }
  if (tail > 0) {
    const int64_t rows = std::max<int64_t>(1, chunk_values / g);
    for (int64_t h = 0; h < heads; h += rows) piece(h, std::min(rows, heads - h), full, 1, tail);
  }
}

}  // namespace

at::Tensor quantize(const at::Tensor& x, const QuantLayout& l) {
  TORCH_CHECK(x.numel() == l.numel && l.numel % l.head_numel == 0, "quantize: layout does not fit the tensor");
#ifdef PAPAYA_CUDA
  if (x.is_cuda()) return quantize_cuda(x, l);
#endif
  at::Tensor buffer = at::empty({l.bytes()}, x.options().dtype(at::kByte));
  const BufferViews out(buffer, l);
  const at::Tensor heads = x.contiguous().view({l.heads(), l.head_numel});
  const double levels = (1 << l.bits) - 1;
  for_each_piece(l, [&](int64_t h, int64_t rows, int64_t g0, int64_t count, int64_t width) {
    at::Tensor v = heads.narrow(0, h, rows).narrow(1, g0 * l.group_size, (count - 1) * l.group_size + width);
    v = v.to(at::kFloat);
    if (width < l.group_size) v = at::constant_pad_nd(v, {0, l.group_size - width}, 0);
    v = v.reshape({rows * count, l.group_size});
    auto [low, high] = at::aminmax(v, 1);
    const at::Tensor mn = round_to_bf16(low, /*up=*/false);
    at::Tensor scale = round_to_bf16((high - mn).div_(levels), /*up=*/true);
    scale.masked_fill_(scale == 0, 1);  // a constant group decodes exactly from its min
    at::Tensor q = (v - mn.unsqueeze(1)).div_(scale.unsqueeze(1));
    q.add_(at::empty_like(q).uniform_(0, 1, rounding_generator()))
        .floor_()
        .clamp_(0, levels);  // stochastic rounding: E[q] = (v - min) / scale
    const at::Tensor codes = pack_codes(q.to(at::kByte), l.bits);
    out.codes.narrow(0, h, rows).narrow(1, g0, count).copy_(codes.view({rows, count, -1}));
    out.mins.narrow(0, h, rows).narrow(1, g0, count).copy_(mn.view({rows, count}));
    out.scales.narrow(0, h, rows).narrow(1, g0, count).copy_(scale.view({rows, count}));
  });
  return buffer;
}

at::Tensor dequantize(const at::Tensor& buffer, const QuantLayout& l, at::IntArrayRef shape, at::ScalarType dtype) {
  TORCH_CHECK(buffer.numel() == l.bytes(), "dequantize: buffer of ", buffer.numel(), " bytes, layout of ", l.bytes());
#ifdef PAPAYA_CUDA
  if (buffer.is_cuda()) return dequantize_cuda(buffer, l, shape, dtype);
#endif
  at::Tensor x = at::empty(shape, buffer.options().dtype(dtype));
  const at::Tensor heads = x.view({l.heads(), l.head_numel});
  const BufferViews in(buffer, l);
  for_each_piece(l, [&](int64_t h, int64_t rows, int64_t g0, int64_t count, int64_t width) {
    const at::Tensor codes = in.codes.narrow(0, h, rows).narrow(1, g0, count).reshape({rows * count, -1});
    const auto range = [&](const at::Tensor& r) {
      return r.narrow(0, h, rows).narrow(1, g0, count).reshape({rows * count, 1}).to(at::kFloat);
    };
    const at::Tensor mn = range(in.mins), scale = range(in.scales);
    at::Tensor v = unpack_codes(codes, l.bits).to(at::kFloat).mul_(scale).add_(mn);
    v = v.view({rows, count * l.group_size}).narrow(1, 0, (count - 1) * l.group_size + width);
    heads.narrow(0, h, rows).narrow(1, g0 * l.group_size, v.size(1)).copy_(v);
  });
  return x;
}

at::Tensor pack_mask(const at::Tensor& mask) {
  const int64_t n = mask.numel();
  at::Tensor bits = mask.reshape({-1}).view(at::kByte);  // bool is one byte, 0 or 1
  if (n % 8) bits = at::constant_pad_nd(bits, {0, 8 - n % 8}, 0);
  return pack_codes(bits.view({-1, 8}), 1).view({-1});
}

at::Tensor unpack_mask(const at::Tensor& packed, at::IntArrayRef shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return unpack_codes(packed.view({-1, 1}), 1).view({-1}).narrow(0, 0, n).view(at::kBool).view(shape);
}

}  // namespace papaya::executor
