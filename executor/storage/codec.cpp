#include "executor/storage/codec.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "executor/storage/quant_math.h"
#include "executor/storage/rounding.h"

#ifdef PAPAYA_CUDA
#include "executor/storage/codec_cuda.h"
#endif

namespace papaya::executor {
namespace {

// The CPU kernels work in fp32 and read and write fp32 and bf16 in place;
// other dtypes go through fp32, as on CUDA.
at::ScalarType kernel_dtype(at::ScalarType t) { return t == at::kBFloat16 ? at::kBFloat16 : at::kFloat; }

// Groups per task of at::parallel_for: about 16K values.
int64_t grain(const QuantLayout& l) { return std::max<int64_t>(1, (int64_t{1} << 14) / l.group_size); }

// Where group g's values start in the tensor, and how many it has (fewer
// than the group size at a head's tail).
struct GroupSpan {
  int64_t first, count;
};
GroupSpan span_of(const QuantLayout& l, int64_t g) {
  const int64_t per_head = l.groups_per_head(), in_head = g % per_head;
  return {(g / per_head) * l.head_numel + in_head * l.group_size, std::min<int64_t>(l.group_size, l.head_numel - in_head * l.group_size)};
}

// Each group in one pass over its values, in loops the compiler vectorizes:
// the values (zero-padded at a head's tail) with their min and max, the bf16
// range, the codes, then the codes packed, the first in the lowest bits.
// The smallest and largest of n values; NaN is passed over, as fminf/fmaxf
// do on CUDA. In independent lanes, each `v < low ? v : low` (what SSE's
// minps computes), so that g++ and clang vectorize it without reordering
// what the result depends on.
std::pair<float, float> min_max(const float* v, int64_t n) {
  constexpr int lanes = 16;
  float low[lanes], high[lanes];
  std::fill(low, low + lanes, std::numeric_limits<float>::infinity());
  std::fill(high, high + lanes, -std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    for (int k = 0; k < lanes; ++k) {
      low[k] = v[i + k] < low[k] ? v[i + k] : low[k];
      high[k] = v[i + k] > high[k] ? v[i + k] : high[k];
    }
  }
  for (int k = 0; i < n; ++i, ++k) {
    low[k] = v[i] < low[k] ? v[i] : low[k];
    high[k] = v[i] > high[k] ? v[i] : high[k];
  }
  float lo = low[0], hi = high[0];
  for (int k = 1; k < lanes; ++k) {
    lo = low[k] < lo ? low[k] : lo;
    hi = high[k] > hi ? high[k] : hi;
  }
  return {lo, hi};
}

template <int Bits, typename T>
void quantize_groups(const T* x, const QuantLayout& l, uint64_t seed, uint8_t* out) {
  constexpr int per_byte = 8 / Bits;
  constexpr float levels = static_cast<float>((1 << Bits) - 1);
  const uint32_t key = quant::noise_key(seed);
  uint8_t* ranges = out + l.groups() * l.code_bytes_per_group();
  at::parallel_for(0, l.groups(), grain(l), [&](int64_t begin, int64_t end) {
    // Locals, not captures: the byte stores below could alias a capture,
    // which would keep the loops from vectorizing.
    const int64_t size = l.group_size, code_bytes = l.code_bytes_per_group();
    std::vector<float> v(static_cast<size_t>(size));
    std::vector<uint8_t> c(static_cast<size_t>(size));
    for (int64_t g = begin; g < end; ++g) {
      const GroupSpan span = span_of(l, g);
      const T* in = x + span.first;
      for (int64_t i = 0; i < span.count; ++i) v[i] = static_cast<float>(in[i]);
      std::fill(v.begin() + span.count, v.end(), 0.f);
      const auto [low, high] = min_max(v.data(), size);
      const quant::Range r = quant::range_of(low, high, Bits);
      std::memcpy(ranges + 2 * g, &r.min_bits, 2);
      std::memcpy(ranges + 2 * (l.groups() + g), &r.scale_bits, 2);
      const float mn = quant::from_bf16(r.min_bits), scale = quant::from_bf16(r.scale_bits);
      const uint64_t index = static_cast<uint64_t>(g * size);
      for (int64_t i = 0; i < size; ++i) {
        c[i] = static_cast<uint8_t>(quant::code_of(v[i], mn, scale, quant::uniform(key, index + static_cast<uint64_t>(i)), levels));
      }
      uint8_t* codes = out + g * code_bytes;
      for (int64_t b = 0; b < code_bytes; ++b) {
        unsigned byte = 0;
        for (int j = 0; j < per_byte; ++j) byte |= static_cast<unsigned>(c[b * per_byte + j]) << (Bits * j);
        codes[b] = static_cast<uint8_t>(byte);
      }
    }
  });
}

template <int Bits, typename T>
void dequantize_groups(const uint8_t* in, const QuantLayout& l, T* x) {
  constexpr int per_byte = 8 / Bits;
  constexpr unsigned mask = (1u << Bits) - 1;
  const uint8_t* ranges = in + l.groups() * l.code_bytes_per_group();
  at::parallel_for(0, l.groups(), grain(l), [&](int64_t begin, int64_t end) {
    const int64_t size = l.group_size, code_bytes = l.code_bytes_per_group();  // locals: as in quantize_groups
    std::vector<uint8_t> c(static_cast<size_t>(size));
    for (int64_t g = begin; g < end; ++g) {
      const GroupSpan span = span_of(l, g);
      uint16_t min_bits, scale_bits;
      std::memcpy(&min_bits, ranges + 2 * g, 2);
      std::memcpy(&scale_bits, ranges + 2 * (l.groups() + g), 2);
      const float mn = quant::from_bf16(min_bits), scale = quant::from_bf16(scale_bits);
      const uint8_t* codes = in + g * code_bytes;
      for (int64_t b = 0; b < code_bytes; ++b) {
        for (int j = 0; j < per_byte; ++j) c[b * per_byte + j] = static_cast<uint8_t>((codes[b] >> (Bits * j)) & mask);
      }
      T* values = x + span.first;
      for (int64_t i = 0; i < span.count; ++i) values[i] = static_cast<T>(quant::decode(c[i], mn, scale));
    }
  });
}

// Calls `kernel` with the bit width as a compile-time constant.
template <typename Kernel>
void with_bits(int bits, Kernel kernel) {
  switch (bits) {
    case 8: kernel(std::integral_constant<int, 8>{}); return;
    case 4: kernel(std::integral_constant<int, 4>{}); return;
    case 2: kernel(std::integral_constant<int, 2>{}); return;
    case 1: kernel(std::integral_constant<int, 1>{}); return;
  }
  TORCH_CHECK(false, "quantized codes of ", bits, " bits: 1, 2, 4 or 8 expected");
}

}  // namespace

at::Tensor quantize(const at::Tensor& x, const QuantLayout& l) {
  TORCH_CHECK(x.numel() == l.numel && l.numel % l.head_numel == 0, "quantize: layout does not fit the tensor");
#ifdef PAPAYA_CUDA
  if (x.is_cuda()) return quantize_cuda(x, l);
#endif
  const at::Tensor values = x.to(kernel_dtype(x.scalar_type())).contiguous();
  at::Tensor buffer = at::empty({l.bytes()}, x.options().dtype(at::kByte));
  const uint64_t seed = next_rounding_seed();
  with_bits(l.bits, [&](auto bits) {
    if (values.scalar_type() == at::kBFloat16) {
      quantize_groups<bits>(values.data_ptr<at::BFloat16>(), l, seed, buffer.data_ptr<uint8_t>());
    } else {
      quantize_groups<bits>(values.data_ptr<float>(), l, seed, buffer.data_ptr<uint8_t>());
    }
  });
  return buffer;
}

at::Tensor dequantize(const at::Tensor& buffer, const QuantLayout& l, at::IntArrayRef shape, at::ScalarType dtype) {
  TORCH_CHECK(buffer.numel() == l.bytes(), "dequantize: buffer of ", buffer.numel(), " bytes, layout of ", l.bytes());
#ifdef PAPAYA_CUDA
  if (buffer.is_cuda()) return dequantize_cuda(buffer, l, shape, dtype);
#endif
  const at::Tensor in = buffer.contiguous();
  at::Tensor x = at::empty(shape, buffer.options().dtype(kernel_dtype(dtype)));
  with_bits(l.bits, [&](auto bits) {
    if (x.scalar_type() == at::kBFloat16) {
      dequantize_groups<bits>(in.data_ptr<uint8_t>(), l, x.data_ptr<at::BFloat16>());
    } else {
      dequantize_groups<bits>(in.data_ptr<uint8_t>(), l, x.data_ptr<float>());
    }
  });
  return x.to(dtype);
}

// Masks in ATen passes: 8 bools (bytes 0 or 1) to a byte, the first in the
// lowest bit.
at::Tensor pack_mask(const at::Tensor& mask) {
  const int64_t n = mask.numel();
  at::Tensor bits = mask.reshape({-1}).view(at::kByte);  // bool is one byte, 0 or 1
  if (n % 8) bits = at::constant_pad_nd(bits, {0, 8 - n % 8}, 0);
  const at::Tensor c = bits.view({-1, 8});
  at::Tensor packed = c.select(1, 0).clone();
  for (int j = 1; j < 8; ++j) packed.bitwise_or_(at::bitwise_left_shift(c.select(1, j), j));
  return packed;
}

at::Tensor unpack_mask(const at::Tensor& packed, at::IntArrayRef shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  const at::Tensor shifts = at::arange(0, 8, packed.options());
  const at::Tensor bits = at::bitwise_right_shift(packed.view({-1, 1}), shifts).bitwise_and_(1);
  return bits.view({-1}).narrow(0, 0, n).view(at::kBool).view(shape);
}

}  // namespace papaya::executor
