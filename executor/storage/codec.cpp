#include "executor/storage/codec.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "executor/storage/cpu_isa.h"
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
  return {(g / per_head) * l.head_numel + in_head * l.group_size,
          std::min<int64_t>(l.group_size, l.head_numel - in_head * l.group_size)};
}

// GCC's and clang's vector extension: `Lanes` floats operated on as one
// value, so that each instruction-set level's loop is as wide as its
// registers allow: the baseline's 4 lanes, AVX2's and AVX-512's 16 (two
// AVX2 registers: two chains of min and max, 4 % faster than one).
template <int Lanes>
struct FloatVector;
template <>
struct FloatVector<4> {
  typedef float type __attribute__((vector_size(16)));
};
template <>
struct FloatVector<8> {
  typedef float type __attribute__((vector_size(32)));
};
template <>
struct FloatVector<16> {
  typedef float type __attribute__((vector_size(64)));
};

// The smallest of a vector's lanes, halving it: each half's lanes against
// the other's, as wide as the level allows.
template <int Lanes>
PAPAYA_CPU_KERNEL float lowest(const typename FloatVector<Lanes>::type& v) {
  if constexpr (Lanes == 4) {
    const float a = v[0] < v[1] ? v[0] : v[1], b = v[2] < v[3] ? v[2] : v[3];
    return a < b ? a : b;
  } else {
    using Half = typename FloatVector<Lanes / 2>::type;
    Half low, high;
    std::memcpy(&low, &v, sizeof low);
    std::memcpy(&high, reinterpret_cast<const char*>(&v) + sizeof low, sizeof high);
    const Half lower = high < low ? high : low;
    return lowest<Lanes / 2>(lower);
  }
}

// The smallest and largest of n values; NaN is passed over, as fminf/fmaxf
// do on CUDA. In lanes, each `v < low ? v : low` (what SSE's minps
// computes), which neither compiler reorders.
template <int Lanes>
PAPAYA_CPU_KERNEL void min_max(const float* __restrict v, int64_t n, float& low, float& high) {
  using Vector = typename FloatVector<Lanes>::type;
  Vector lows, highs;
  for (int k = 0; k < Lanes; ++k) {
    lows[k] = std::numeric_limits<float>::infinity();
    highs[k] = -std::numeric_limits<float>::infinity();
  }
  int64_t i = 0;
  for (; i + Lanes <= n; i += Lanes) {
    Vector x;
    std::memcpy(&x, v + i, sizeof x);
    lows = x < lows ? x : lows;
    highs = x > highs ? x : highs;
  }
  const Vector negated = -highs;
  low = lowest<Lanes>(lows);
  high = -lowest<Lanes>(negated);
  for (; i < n; ++i) {
    low = v[i] < low ? v[i] : low;
    high = v[i] > high ? v[i] : high;
  }
}

// Groups [begin, end), each in one pass over its values: their min and max
// (read in place where a group is whole fp32 values, else converted and
// zero-padded at a head's tail), the bf16 range, the codes, then the codes
// packed, the first in the lowest bits.
template <int Bits, typename T, int Lanes>
PAPAYA_CPU_KERNEL void quantize_range(const T* x, const QuantLayout& l, uint32_t key, uint8_t* out, int64_t begin, int64_t end) {
  constexpr int per_byte = 8 / Bits;
  constexpr float levels = static_cast<float>((1 << Bits) - 1);
  // Locals, not reads through `l`: the byte stores below could alias it,
  // which would keep the loops from vectorizing.
  const int64_t size = l.group_size, code_bytes = l.code_bytes_per_group(), groups = l.groups();
  uint8_t* __restrict ranges = out + groups * code_bytes;
  std::vector<float> padded(static_cast<size_t>(size));
  std::vector<uint8_t> unpacked(static_cast<size_t>(size));
  for (int64_t g = begin; g < end; ++g) {
    const GroupSpan span = span_of(l, g);
    const float* __restrict v = padded.data();
    if (std::is_same_v<T, float> && span.count == size) {
      v = reinterpret_cast<const float*>(x + span.first);
    } else {
      for (int64_t i = 0; i < span.count; ++i) padded[i] = static_cast<float>(x[span.first + i]);
      std::fill(padded.begin() + span.count, padded.end(), 0.f);
    }
    float low, high;
    min_max<Lanes>(v, size, low, high);
    const quant::Range r = quant::range_of(low, high, Bits);
    std::memcpy(ranges + 2 * g, &r.min_bits, 2);
    std::memcpy(ranges + 2 * (groups + g), &r.scale_bits, 2);
    const float mn = quant::from_bf16(r.min_bits), scale = quant::from_bf16(r.scale_bits);
    const uint32_t index = static_cast<uint32_t>(g * size);
    uint8_t* __restrict codes = out + g * code_bytes;
    // 8-bit codes are their own bytes.
    uint8_t* __restrict c = per_byte == 1 ? codes : unpacked.data();
    for (int64_t i = 0; i < size; ++i) {
      c[i] = static_cast<uint8_t>(quant::code_of(v[i], mn, scale, quant::uniform(key, index + static_cast<uint32_t>(i)), levels));
    }
    if (per_byte == 1) continue;
    for (int64_t b = 0; b < code_bytes; ++b) {
      unsigned byte = 0;
      for (int j = 0; j < per_byte; ++j) byte |= static_cast<unsigned>(c[b * per_byte + j]) << (Bits * j);
      codes[b] = static_cast<uint8_t>(byte);
    }
  }
}

// quantize_range at each instruction-set level (cpu_isa.h).
template <int Bits, typename T>
void quantize_range_baseline(const T* x, const QuantLayout& l, uint32_t key, uint8_t* out, int64_t begin, int64_t end) {
  quantize_range<Bits, T, 4>(x, l, key, out, begin, end);
}
template <int Bits, typename T>
PAPAYA_TARGET_AVX2 void quantize_range_avx2(const T* x, const QuantLayout& l, uint32_t key, uint8_t* out, int64_t begin,
                                            int64_t end) {
  quantize_range<Bits, T, 16>(x, l, key, out, begin, end);
}
template <int Bits, typename T>
PAPAYA_TARGET_AVX512 void quantize_range_avx512(const T* x, const QuantLayout& l, uint32_t key, uint8_t* out, int64_t begin,
                                                int64_t end) {
  quantize_range<Bits, T, 16>(x, l, key, out, begin, end);
}

template <int Bits, typename T>
void quantize_groups(const T* x, const QuantLayout& l, uint64_t seed, uint8_t* out) {
  const uint32_t key = quant::noise_key(seed);
  const cpu_isa::Level level = cpu_isa::level();
  at::parallel_for(0, l.groups(), grain(l), [&](int64_t begin, int64_t end) {
    switch (level) {
      case cpu_isa::Level::avx512: quantize_range_avx512<Bits>(x, l, key, out, begin, end); return;
      case cpu_isa::Level::avx2: quantize_range_avx2<Bits>(x, l, key, out, begin, end); return;
      case cpu_isa::Level::baseline: quantize_range_baseline<Bits>(x, l, key, out, begin, end); return;
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

// Masks: 8 bools (bytes 0 or 1) to a byte, the first in the lowest bit. On
// the CPU in one loop each way: a word of 8 bools packed by one multiply
// (each bool lands on its bit of the top byte), a byte unpacked by a table
// of 256 words. Elsewhere in ATen passes.
namespace {

constexpr uint64_t bool_lanes = 0x0101010101010101ull;   // bit 0 of each byte
constexpr uint64_t gather_bits = 0x0102040810204080ull;  // byte j's bit 0 to bit 56 + j

uint8_t packed_byte(uint64_t bools) { return static_cast<uint8_t>(((bools & bool_lanes) * gather_bits) >> 56); }

const std::array<uint64_t, 256>& unpacked_bytes() {
  static const std::array<uint64_t, 256> table = [] {
    std::array<uint64_t, 256> t{};
    for (unsigned byte = 0; byte < 256; ++byte) {
      for (int j = 0; j < 8; ++j) t[byte] |= static_cast<uint64_t>((byte >> j) & 1) << (8 * j);
    }
    return t;
  }();
  return table;
}

}  // namespace

// Bit j of each byte: whether value j of its 8 is nonzero, over bytes
// [begin, end) of n values.
template <typename T>
void pack_nonzero(const T* __restrict in, int64_t n, uint8_t* __restrict out, int64_t begin, int64_t end) {
  for (int64_t b = begin; b < end; ++b) {
    unsigned byte = 0;
    for (int64_t j = 0; j < 8 && 8 * b + j < n; ++j) byte |= static_cast<unsigned>(in[8 * b + j] != T(0)) << j;
    out[b] = static_cast<uint8_t>(byte);
  }
}

at::Tensor pack_mask(const at::Tensor& mask) {
  const int64_t n = mask.numel();
  if (!mask.device().is_cpu()) {
    at::Tensor bits = (mask.scalar_type() == at::kBool ? mask : mask != 0).reshape({-1}).view(at::kByte);
    if (n % 8) bits = at::constant_pad_nd(bits, {0, 8 - n % 8}, 0);
    const at::Tensor c = bits.view({-1, 8});
    at::Tensor packed = c.select(1, 0).clone();
    for (int j = 1; j < 8; ++j) packed.bitwise_or_(at::bitwise_left_shift(c.select(1, j), j));
    return packed;
  }
  const at::Tensor values = mask.contiguous();
  at::Tensor packed = at::empty({(n + 7) / 8}, mask.options().dtype(at::kByte));
  uint8_t* out = packed.data_ptr<uint8_t>();
  if (values.scalar_type() != at::kBool) {
    AT_DISPATCH_ALL_TYPES_AND2(at::kBFloat16, at::kHalf, values.scalar_type(), "pack_mask",
                               [&] { pack_nonzero(values.data_ptr<scalar_t>(), n, out, 0, packed.numel()); });
    return packed;
  }
  const uint8_t* in = reinterpret_cast<const uint8_t*>(values.data_ptr<bool>());
  const int64_t whole = n / 8;
  for (int64_t b = 0; b < whole; ++b) {
    uint64_t word;
    std::memcpy(&word, in + 8 * b, 8);
    out[b] = packed_byte(word);
  }
  if (n % 8) {
    uint64_t word = 0;
    std::memcpy(&word, in + 8 * whole, static_cast<size_t>(n % 8));
    out[whole] = packed_byte(word);
  }
  return packed;
}

at::Tensor unpack_mask(const at::Tensor& packed, at::IntArrayRef shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (!packed.device().is_cpu()) {
    const at::Tensor shifts = at::arange(0, 8, packed.options());
    const at::Tensor bits = at::bitwise_right_shift(packed.view({-1, 1}), shifts).bitwise_and_(1);
    return bits.view({-1}).narrow(0, 0, n).view(at::kBool).view(shape);
  }
  const at::Tensor bytes = packed.contiguous();
  const uint8_t* in = bytes.data_ptr<uint8_t>();
  at::Tensor mask = at::empty(shape, packed.options().dtype(at::kBool));
  uint8_t* out = reinterpret_cast<uint8_t*>(mask.data_ptr<bool>());
  const std::array<uint64_t, 256>& table = unpacked_bytes();
  const int64_t whole = n / 8;
  for (int64_t b = 0; b < whole; ++b) std::memcpy(out + 8 * b, &table[in[b]], 8);
  if (n % 8) std::memcpy(out + 8 * whole, &table[in[whole]], static_cast<size_t>(n % 8));
  return mask;
}

}  // namespace papaya::executor
